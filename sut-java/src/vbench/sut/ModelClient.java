package vbench.sut;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One verifier call to an OpenAI-compatible endpoint (`POST <base_url>/chat/completions`), kept raw: the reply is
 * judged by {@link Reply}, not here. A failed call becomes a {@link Call} with `error` set, never an exception.
 * The whole call, a retry included, stays within the request's `timeout_s`.
 */
final class ModelClient {
    static final String KEY_ENV = "VBENCH_SUT_API_KEY";
    static final String PLACEHOLDER_KEY = "vbench-sut-no-key";
    private static final int ATTEMPTS = 2;

    /** What one verifier call returned. */
    record Call(String raw, String model, String finishReason, double latencyMs, Map<String, Object> usage,
                String error, String refusal, int attempts) {}

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final Json gson;

    ModelClient(Json gson) {
        this.gson = gson;
    }

    Call call(String baseUrl, String model, List<Map<String, Object>> messages, double timeoutS) {
        Map<String, Object> body = Values.obj("model", model, "messages", messages, "temperature", 0,
                "response_format", Values.obj("type", "json_object"));
        byte[] payload = gson.write(body).getBytes(StandardCharsets.UTF_8);
        String url = baseUrl.replaceAll("/+$", "") + "/chat/completions";
        String key = System.getenv(KEY_ENV);
        long start = System.nanoTime();
        long deadline = start + (long) (timeoutS * 1e9);
        String error = null;
        int attempt = 0;
        while (attempt < ATTEMPTS) {
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                break;
            }
            attempt++;
            HttpRequest request;
            try {
                request = HttpRequest.newBuilder(URI.create(url))
                        .timeout(Duration.ofNanos(remaining))
                        .header("Content-Type", "application/json")
                        .header("Authorization", "Bearer " + (key == null || key.isEmpty() ? PLACEHOLDER_KEY : key))
                        .POST(HttpRequest.BodyPublishers.ofByteArray(payload))
                        .build();
            } catch (IllegalArgumentException e) {
                error = "bad endpoint URL " + url + ": " + e.getMessage();
                break;
            }
            // the whole exchange, body included, within the deadline (the client's own timeout stops at the headers)
            CompletableFuture<HttpResponse<String>> pending =
                    http.sendAsync(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            HttpResponse<String> response;
            try {
                response = pending.get(remaining, TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                pending.cancel(true);
                error = "timeout: no whole reply within settings.timeout_s (" + timeoutS + " s), retries included";
                break;
            } catch (ExecutionException e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                error = (cause instanceof HttpTimeoutException ? "timeout: " : "transport: ")
                        + cause.getClass().getSimpleName() + ": " + cause.getMessage();
                continue;
            } catch (InterruptedException e) {
                pending.cancel(true);
                Thread.currentThread().interrupt();
                error = "interrupted";
                break;
            }
            int status = response.statusCode();
            if (status == 429 || status >= 500) {
                error = "HTTP " + status;
                continue;
            }
            if (status != 200) {
                error = "HTTP " + status;
                break;
            }
            Call call = completion(response.body(), model, ms(start), attempt);
            if (call.error() == null) {
                return call;
            }
            error = call.error(); // a 200 that is no completion (an HTML page, broken JSON): the next attempt may be
        }
        if (error == null) {
            error = "timeout: no reply within settings.timeout_s (" + timeoutS + " s)";
        }
        return new Call(null, model, null, ms(start), usage(null), error, null, attempt);
    }

    private static double ms(long start) {
        return Math.round((System.nanoTime() - start) / 1e3) / 1e3;
    }

    /** The completion's first choice: its content, refusal and finish reason, and the token usage. */
    private static Call completion(String text, String model, double latencyMs, int attempts) {
        Map<String, Object> body;
        try {
            body = Values.map(StrictJson.parse(text));
        } catch (StrictJson.JsonError e) {
            body = null;
        }
        List<Object> choices = body == null ? null : Values.list(body.get("choices"));
        Map<String, Object> choice = choices == null || choices.isEmpty() ? null : Values.map(choices.get(0));
        Map<String, Object> message = choice == null ? null : Values.map(choice.get("message"));
        if (message == null) {
            return new Call(null, model, null, latencyMs, usage(null), "the endpoint answered no completion", null, attempts);
        }
        return new Call(Values.str(message.get("content")), model, Values.str(choice.get("finish_reason")), latencyMs,
                usage(Values.map(body.get("usage"))), null, Values.str(message.get("refusal")), attempts);
    }

    /** Token counts as the endpoint reported them; zero where it gave none. */
    private static Map<String, Object> usage(Map<String, Object> given) {
        Map<String, Object> out = Values.obj("prompt_tokens", 0L, "completion_tokens", 0L, "total_tokens", 0L);
        if (given != null) {
            for (String k : out.keySet()) {
                Object v = given.get(k);
                if (v instanceof Long && (Long) v >= 0) {
                    out.put(k, v);
                }
            }
        }
        return out;
    }
}
