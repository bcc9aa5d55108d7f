// java-httpserver: the seed articles' Java server. The JDK's built-in
// com.sun.net.httpserver.HttpServer on a cached thread pool, the delay a Thread.sleep in the
// handler (so each delayed request holds a pool thread, as in the seeds).
//
//   java HelloServer HOST PORT DELAY_MS
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

public class HelloServer {
  private static final byte[] BODY = "Have Fun ~ Tester !".getBytes(StandardCharsets.UTF_8);

  public static void main(String[] args) throws IOException {
    if (args.length < 3 || args.length > 4) {  // a 4th argument (threads) is accepted and unused
      System.err.println("usage: java HelloServer HOST PORT DELAY_MS");
      System.exit(2);
    }
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    long delayMs = Long.parseLong(args[2]);

    HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 0);
    server.createContext("/", exchange -> {
      if (delayMs > 0) {
        try {
          Thread.sleep(delayMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      exchange.getResponseHeaders().set("Content-Type", "text/plain");
      exchange.sendResponseHeaders(200, BODY.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(BODY);
      }
    });
    server.setExecutor(Executors.newCachedThreadPool());
    server.start();
    System.err.println("java-httpserver listening on " + host + ":" + port + " (delay " + delayMs + " ms)");
  }
}
