package vbench.sut;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The Java implementation of the spec served over the SUT protocol (`sut_protocol_v1`): `GET /info` names it,
 * `POST /verify` runs one session through the whole system and answers the persisted `self_evaluation`.
 *
 * Usage: {@code java -jar vbench-sut.jar [--host 127.0.0.1] [--port 0] [--port-file FILE] [--store FILE]}.
 * The port file receives the bound port number alone once requests are accepted.
 */
public final class SutServer {
    static final String NAME = "verifier-bench Java SUT";
    static final String VERSION = "0.1.0";
    static final String PROTOCOL = "sut_protocol_v1";
    static final int MAX_BODY = 64 * 1024 * 1024;

    /** Gson with its defaults (HTML-safe escaping on); nulls written, since the protocol names null fields. */
    static final Gson GSON = new GsonBuilder().serializeNulls().create();

    private final Pipeline pipeline;
    private final Json json;

    SutServer(Pipeline pipeline, Json json) {
        this.pipeline = pipeline;
        this.json = json;
    }

    /** The name /info gives (a variant names its JSON library and configuration). */
    static String name = NAME;

    public static void main(String[] args) throws Exception {
        run(args, GSON::toJson, NAME);
    }

    /** Serve with {@code json} writing every JSON text, named {@code serverName} in /info. */
    static void run(String[] args, Json json, String serverName) throws Exception {
        name = serverName;
        String host = "127.0.0.1";
        int port = 0;
        Path portFile = null;
        String storePath = null;
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--host": host = value; i++; break;
                case "--port": port = Integer.parseInt(value); i++; break;
                case "--port-file": portFile = Path.of(value); i++; break;
                case "--store": storePath = value; i++; break;
                default:
                    System.err.println("unknown argument " + args[i]
                            + "; usage: [--host 127.0.0.1] [--port 0] [--port-file FILE] [--store FILE]");
                    System.exit(2);
            }
        }
        if (storePath == null) {
            File tmp = File.createTempFile("vbench-java-sut-", ".sqlite");
            tmp.deleteOnExit();
            new File(tmp.getPath() + "-wal").deleteOnExit();
            new File(tmp.getPath() + "-shm").deleteOnExit();
            storePath = tmp.getPath();
        }
        Store store = new Store("jdbc:sqlite:" + storePath, json);
        SutServer sut = new SutServer(new Pipeline(store, new ModelClient(json), json), json);
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 64);
        ExecutorService workers = Executors.newFixedThreadPool(16);
        server.setExecutor(workers);
        server.createContext("/info", sut::info);
        server.createContext("/verify", sut::verify);
        server.start();
        int bound = server.getAddress().getPort();
        System.out.println("SUT listening on http://" + host + ":" + bound);
        System.out.flush();
        if (portFile != null) {
            Path tmp = portFile.resolveSibling(portFile.getFileName() + ".tmp");
            Files.writeString(tmp, Integer.toString(bound));
            Files.move(tmp, portFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.stop(0);
            workers.shutdownNow();
            try {
                store.close();
            } catch (Exception e) {
                // closing at exit: nothing left to save
            }
        }));
    }

    private void info(HttpExchange ex) throws IOException {
        try (ex) {
            if (!"GET".equals(ex.getRequestMethod()) || !"/info".equals(ex.getRequestURI().getPath())) {
                send(ex, 404, Values.obj("error", "not found"));
                return;
            }
            send(ex, 200, Values.obj("name", name, "version", VERSION, "protocol", PROTOCOL));
        }
    }

    private void verify(HttpExchange ex) throws IOException {
        try (ex) {
            if (!"POST".equals(ex.getRequestMethod()) || !"/verify".equals(ex.getRequestURI().getPath())) {
                send(ex, 404, Values.obj("error", "not found"));
                return;
            }
            byte[] body = ex.getRequestBody().readNBytes(MAX_BODY + 1);
            if (body.length > MAX_BODY) {
                send(ex, 413, Values.obj("error", "the body is larger than " + MAX_BODY + " bytes"));
                return;
            }
            Pipeline.Input input;
            try {
                input = Protocol.read(new String(body, StandardCharsets.UTF_8));
            } catch (Protocol.BadRequest e) {
                send(ex, 400, Values.obj("error", e.getMessage()));
                return;
            }
            try {
                String namespace = "req-" + UUID.randomUUID() + "/";
                send(ex, 200, Values.obj("self_evaluation", pipeline.verify(input, namespace)));
            } catch (Exception e) {
                send(ex, 500, Values.obj("error", e.getClass().getSimpleName() + ": " + e.getMessage()));
            }
        }
    }

    private void send(HttpExchange ex, int status, Map<String, Object> body) throws IOException {
        byte[] bytes = json.write(body).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json; charset=utf-8");
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    static List<Object> list(Object value) {
        return value instanceof List ? new ArrayList<>(Values.list(value)) : null;
    }
}
