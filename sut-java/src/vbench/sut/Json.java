package vbench.sut;

/**
 * How the SUT writes JSON: the answer, the rows it stores and the model request with its prompt. Gson by default
 * ({@link SutServer#GSON}); a variant may bring another library (sut-java/jackson/).
 */
@FunctionalInterface
public interface Json {
    String write(Object value);
}
