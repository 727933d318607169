package example;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/** A small JDK HTTP service, tested through Petri's test mode (see README.md). */
public final class Server {
    private static void reply(HttpExchange exchange, int status, String json) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    public static void main(String[] args) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 8080), 0);
        server.createContext("/health", exchange -> reply(exchange, 200, "{\"status\":\"ok\"}"));
        server.createContext("/add", exchange -> {
            String[] parts = exchange.getRequestURI().getPath().split("/");
            try {
                int sum = Integer.parseInt(parts[2]) + Integer.parseInt(parts[3]);
                reply(exchange, 200, "{\"sum\":" + sum + "}");
            } catch (RuntimeException e) {
                reply(exchange, 400, "{\"error\":\"use /add/<a>/<b>\"}");
            }
        });
        server.start();
        System.out.println("listening on 8080");
    }
}
