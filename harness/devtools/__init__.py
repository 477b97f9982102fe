"""Development tooling, kept out of the runtime model layer (`harness.llm`).

`local_server`: a scripted OpenAI-compatible server for tests, benchmarks and the certification kit's
scripted model endpoints. `llamacpp` and `local_llm`: install and run llama.cpp's server with the packaged
model for real-model runs (`python -m harness.devtools.local_llm`). Neither the system nor `harness.llm`
imports this package; the kit and the CLI may (tests/test_layering.py).
"""
