"""mkdocs-gen-files script: the reference pages, generated from the code at every build (never committed)."""

from __future__ import annotations

import mkdocs_gen_files

from harness.cli.docs_reference import reference_pages

for path, text in reference_pages().items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(text)
