package vbench.sut;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The system's persistence in SQLite (xerial sqlite-jdbc): `diagnosis_session` rows with their
 * `self_evaluation` JSON, and `tool_invocation` rows. Writing a verifier evaluation merges it into
 * `self_evaluation` under `verifier_evaluation`, keeping every sibling key (§7). One connection, used by one
 * thread at a time; each request's sessions live under ids of their own.
 */
final class Store implements AutoCloseable {
    private final Connection db;
    private final Json gson;

    Store(String url, Json gson) throws SQLException {
        this.db = DriverManager.getConnection(url);
        this.gson = gson;
        try (Statement s = db.createStatement()) {
            s.execute("PRAGMA journal_mode=WAL");
            s.execute("CREATE TABLE IF NOT EXISTS diagnosis_session (id TEXT PRIMARY KEY, question TEXT NOT NULL,"
                    + " final_answer TEXT, structured_output_raw TEXT, self_evaluation TEXT NOT NULL)");
            s.execute("CREATE TABLE IF NOT EXISTS tool_invocation (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                    + " id TEXT NOT NULL, tool_name TEXT NOT NULL, arguments TEXT NOT NULL, status TEXT NOT NULL,"
                    + " result TEXT NOT NULL, PRIMARY KEY (session_id, seq), UNIQUE (session_id, id))");
        }
    }

    synchronized void addSession(String id, String question, String finalAnswer, String raw, Map<String, Object> selfEvaluation,
                                 List<Model.Invocation> invocations) throws SQLException {
        transaction(() -> {
            try (PreparedStatement s = db.prepareStatement("INSERT INTO diagnosis_session VALUES (?, ?, ?, ?, ?)")) {
                s.setString(1, id);
                s.setString(2, question);
                s.setString(3, finalAnswer);
                s.setString(4, raw);
                s.setString(5, gson.write(selfEvaluation));
                s.executeUpdate();
            }
            try (PreparedStatement s = db.prepareStatement("INSERT INTO tool_invocation VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                int seq = 0;
                for (Model.Invocation inv : invocations) {
                    s.setString(1, id);
                    s.setInt(2, seq++);
                    s.setString(3, inv.id());
                    s.setString(4, inv.toolName());
                    s.setString(5, gson.write(inv.arguments()));
                    s.setString(6, inv.status());
                    s.setString(7, inv.result());
                    s.addBatch();
                }
                s.executeBatch();
            }
        });
    }

    private interface Work {
        void run() throws SQLException;
    }

    /** Run `work` as one transaction: all of it is written, or none. */
    private void transaction(Work work) throws SQLException {
        db.setAutoCommit(false);
        try {
            work.run();
            db.commit();
        } catch (SQLException e) {
            db.rollback();
            throw e;
        } finally {
            db.setAutoCommit(true);
        }
    }

    /** The session's tool_invocation rows in call order. */
    synchronized List<Model.Invocation> invocations(String sessionId) throws SQLException {
        List<Model.Invocation> out = new ArrayList<>();
        try (PreparedStatement s = db.prepareStatement(
                "SELECT id, tool_name, arguments, status, result FROM tool_invocation WHERE session_id = ? ORDER BY seq")) {
            s.setString(1, sessionId);
            try (ResultSet r = s.executeQuery()) {
                while (r.next()) {
                    out.add(new Model.Invocation(r.getString(1), r.getString(2), Values.map(parse(r.getString(3))),
                            r.getString(4), r.getString(5)));
                }
            }
        }
        return out;
    }

    /** Merge the evaluation into self_evaluation (siblings kept) and return the whole persisted object. */
    synchronized Map<String, Object> writeVerifierEvaluation(String sessionId, Map<String, Object> evaluation) throws SQLException {
        transaction(() -> {
            Map<String, Object> current = read(sessionId);
            current.put("verifier_evaluation", evaluation);
            try (PreparedStatement s = db.prepareStatement("UPDATE diagnosis_session SET self_evaluation = ? WHERE id = ?")) {
                s.setString(1, gson.write(current));
                s.setString(2, sessionId);
                s.executeUpdate();
            }
        });
        return read(sessionId);
    }

    private Map<String, Object> read(String sessionId) throws SQLException {
        try (PreparedStatement s = db.prepareStatement("SELECT self_evaluation FROM diagnosis_session WHERE id = ?")) {
            s.setString(1, sessionId);
            try (ResultSet r = s.executeQuery()) {
                if (!r.next()) {
                    throw new SQLException("no diagnosis_session " + sessionId);
                }
                return Values.map(parse(r.getString(1)));
            }
        }
    }

    private static Object parse(String json) throws SQLException {
        try {
            return StrictJson.parse(json);
        } catch (StrictJson.JsonError e) {
            throw new SQLException("stored JSON does not parse: " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void close() throws SQLException {
        db.close();
    }
}
