package vbench.sut;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * One diagnosis session through the system: parse -> gatekeeper -> verifier model -> policy -> persist
 * (INTERPRETATION §2-§7). The verifier inputs are explicit and go to the model as one JSON document.
 */
final class Pipeline {
    /** What a verify request carries, read from the protocol body. */
    record Input(String sessionId, String question, List<Model.Invocation> invocations,
                 List<Map.Entry<String, List<Model.Invocation>>> otherSessions, Map<String, Object> selfEvaluation,
                 List<Model.TraceEntry> givenTrace, String finalAnswer, String structuredRaw,
                 String baseUrl, String model, int excerptChars, boolean claimGuard, double timeoutS) {}

    private final Store store;
    private final ModelClient client;
    private final Json gson;
    private final String systemPrompt;
    private final String promptName;
    private final String promptVersion;

    Pipeline(Store store, ModelClient client, Json gson) throws IOException {
        this.store = store;
        this.client = client;
        this.gson = gson;
        this.systemPrompt = resource("verifier-system.txt");
        Properties p = new Properties();
        try (InputStream in = Pipeline.class.getResourceAsStream("prompt.properties")) {
            p.load(in);
        }
        this.promptName = p.getProperty("name");
        this.promptVersion = p.getProperty("version");
    }

    private static String resource(String name) throws IOException {
        try (InputStream in = Pipeline.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IOException("missing resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** Run the request under `namespace` (its own session ids) and return the persisted self_evaluation. */
    Map<String, Object> verify(Input in, String namespace) throws SQLException {
        for (Map.Entry<String, List<Model.Invocation>> other : in.otherSessions()) {
            store.addSession(namespace + other.getKey(), "", null, null, new LinkedHashMap<>(), other.getValue());
        }
        String sessionId = namespace + in.sessionId();
        store.addSession(sessionId, in.question(), in.finalAnswer(), in.structuredRaw(), in.selfEvaluation(), in.invocations());

        Executor.Parsed parsed = Executor.parse(in.structuredRaw());
        List<Model.Claim> claims = Executor.claims(parsed);
        Map<String, Model.Invocation> rows = new HashMap<>();
        for (Model.Invocation inv : store.invocations(sessionId)) {
            rows.put(inv.id(), inv);
        }
        List<Model.TraceEntry> trace = in.givenTrace() != null ? in.givenTrace()
                : Trace.build(store.invocations(sessionId), in.excerptChars());
        Gatekeeper.Result gk = Gatekeeper.run(parsed, rows, trace);

        ModelClient.Call call = client.call(in.baseUrl(), in.model(), messages(in, parsed, trace, gk), in.timeoutS());
        Reply.Read read = Reply.read(call);
        Model.Reply reply = read.reply();
        Policy.Outcome outcome = Policy.apply(parsed, claims, gk, reply, rows, trace, in.claimGuard());
        return store.writeVerifierEvaluation(sessionId, evaluation(outcome, reply, read.status(), parsed, trace, gk, call, in.claimGuard()));
    }

    /** The explicit verifier inputs (the spec's `gatekeeper_result`, the structured claims, the trace summary). */
    private List<Map<String, Object>> messages(Input in, Executor.Parsed parsed, List<Model.TraceEntry> trace, Gatekeeper.Result gk) {
        Map<String, Object> structured = parsed.structured();
        List<Object> traceJson = new ArrayList<>();
        trace.forEach(e -> traceJson.add(e.json()));
        Map<String, Object> inputs = Values.obj(
                "question", in.question(),
                "executor_final_answer", in.finalAnswer(),
                "executor_output_parse_status", parsed.json(),
                "executor_structured_output", structured,
                "claims", structured == null ? List.of() : structured.get("claims"),
                "tool_trace_summary", traceJson,
                "gatekeeper_result", gk.json());
        String user = "Verification inputs (JSON):\n" + gson.write(inputs);
        return List.of(Values.obj("role", "system", "content", systemPrompt), Values.obj("role", "user", "content", user));
    }

    private Map<String, Object> evaluation(Policy.Outcome o, Model.Reply reply, Reply.Status status, Executor.Parsed parsed,
                                           List<Model.TraceEntry> trace, Gatekeeper.Result gk, ModelClient.Call call,
                                           boolean claimGuard) {
        List<Object> checks = new ArrayList<>();
        o.checks().forEach(c -> checks.add(c.json()));
        List<Object> traceJson = new ArrayList<>();
        trace.forEach(e -> traceJson.add(e.json()));
        List<Object> adjustments = new ArrayList<>();
        o.adjustments().forEach(a -> adjustments.add(a.json()));
        Map<String, Object> verifier = Values.obj("model", call.model(), "prompt_name", promptName,
                "prompt_version", promptVersion, "latency_ms", call.latencyMs(), "usage", call.usage(),
                "finish_reason", call.finishReason(), "attempts", call.attempts(), "error", call.error());
        return Values.obj(
                "schema_version", "verifier_evaluation_v1",
                "verdict", o.verdict().name(),
                "model_verdict", o.modelVerdict() == null ? null : o.modelVerdict().name(),
                "groundedness_score", reply == null ? null : reply.groundedness(),
                "critical_fact_count", o.criticalCount(),
                "model_critical_fact_count", reply == null ? null : reply.criticalFactCount(),
                "claim_checks", checks,
                "facts_checked", o.facts(),
                "rationale", reply == null ? "" : reply.rationale(),
                "executor_output_parse_status", parsed.json(),
                "tool_trace_summary", traceJson,
                "gatekeeper_result", gk.json(),
                "reply_status", status.json(),
                "derived_verdict", o.derived().name(),
                "claim_guard", claimGuard,
                "adjustments", adjustments,
                "verifier", verifier);
    }
}
