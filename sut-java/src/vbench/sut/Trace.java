package vbench.sut;

import java.util.ArrayList;
import java.util.List;

/** The tool trace summary (§7): one entry per invocation, in order, T1, T2, ..., the result cut to a limit. */
final class Trace {
    private Trace() {}

    static List<Model.TraceEntry> build(List<Model.Invocation> invocations, int excerptChars) {
        List<Model.TraceEntry> out = new ArrayList<>();
        int position = 1;
        for (Model.Invocation inv : invocations) {
            String result = inv.result();
            out.add(new Model.TraceEntry("T" + position++, inv.toolName(), List.of(inv.id()), inv.status(),
                    cut(result, excerptChars), result.codePointCount(0, result.length()) > excerptChars));
        }
        return out;
    }

    /** The first `limit` characters, counted as code points (a surrogate pair is one character, never split). */
    static String cut(String text, int limit) {
        if (text.codePointCount(0, text.length()) <= limit) {
            return text;
        }
        return text.substring(0, text.offsetByCodePoints(0, limit));
    }

    /** The entry a reference points at: by trace_ref first, else by any of its invocation ids. */
    static Model.TraceEntry find(List<Model.TraceEntry> trace, Model.Ref ref) {
        if (ref.traceRef() != null) {
            for (Model.TraceEntry e : trace) {
                if (e.traceRef().equals(ref.traceRef())) {
                    return e;
                }
            }
        }
        for (String id : ref.ids()) {
            for (Model.TraceEntry e : trace) {
                if (e.ids().contains(id)) {
                    return e;
                }
            }
        }
        return null;
    }

    /** Fill a reference's absent fields from the entry it points at; what it gave is kept. */
    static Model.Ref complete(Model.Ref ref, List<Model.TraceEntry> trace) {
        Model.TraceEntry e = find(trace, ref);
        if (e == null) {
            return ref;
        }
        return new Model.Ref(ref.traceRef() != null ? ref.traceRef() : e.traceRef(),
                ref.toolName() != null ? ref.toolName() : e.toolName(),
                !ref.ids().isEmpty() ? ref.ids() : e.ids(), ref.wellTyped());
    }
}
