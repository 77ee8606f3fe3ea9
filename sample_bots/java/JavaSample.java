// A sample trick-arena bot in Java: a gRPC server implementing arena.v1.BotService.
//
// It plays Wizard and Trumps with a simple strategy that is always legal, because every
// answer is picked from the legal actions the request lists (the same strategy as the
// C++, Go and Node.js samples). It serves the standard health service (the arena waits
// for it) and ends cleanly on SIGTERM. Copy it and make it smarter.
//
// It is built from Debian's grpc-java and protobuf-java jars with javac (`make` in this
// folder; see README.md). Debian's grpc-java has no grpc-services jar, so the health
// service is our own (below, from the standard health.proto in proto/grpc/health/v1/)
// and there is no server reflection; and Debian's Netty serves neither unix sockets nor
// TLS with ALPN, so these are served by a small relay (Relay, below) between the JDK's
// own sockets and an in-process Netty address where gRPC listens.

import arena.v1.Bot.BidRequest;
import arena.v1.Bot.BidResponse;
import arena.v1.Bot.ChooseTrumpRequest;
import arena.v1.Bot.ChooseTrumpResponse;
import arena.v1.Bot.GameEndedRequest;
import arena.v1.Bot.GameEndedResponse;
import arena.v1.Bot.HelloRequest;
import arena.v1.Bot.HelloResponse;
import arena.v1.Bot.PlayRequest;
import arena.v1.Bot.PlayResponse;
import arena.v1.Bot.ProtocolVersion;
import arena.v1.Bot.RoundEndedRequest;
import arena.v1.Bot.RoundEndedResponse;
import arena.v1.BotServiceGrpc;
import arena.v1.GameOuterClass.Card;
import arena.v1.GameOuterClass.CardKind;
import arena.v1.GameOuterClass.Game;
import arena.v1.GameOuterClass.SeatView;
import arena.v1.GameOuterClass.Suit;
import arena.v1.GameOuterClass.Trick;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;

public final class JavaSample {
  static final String NAME = "java-sample";
  static final String VERSION = "1.0.0";

  // gRPC sets SO_KEEPALIVE on every connection, which Netty's in-process channels (behind
  // the unix socket relay, below) do not have: Netty warns of it on each connection, in
  // java.util.logging. Kept here, since the logging keeps its loggers by weak reference.
  static final Logger NETTY_BOOTSTRAP = Logger.getLogger("io.netty.bootstrap");

  // Standard output is discarded by the arena; standard error goes to the bot's log file.
  static void log(String message) {
    System.err.println("[" + NAME + "] " + message);
  }

  // -- the strategy ---------------------------------------------------------------------

  // How strong a card is in the trick in progress: Wizard > trumps > led suit > others >
  // Jester. `led` is the led suit, or SUIT_UNSPECIFIED when there is none (yet). A suited
  // card never has SUIT_UNSPECIFIED, so "no trump" matches no card.
  static int power(Card card, Suit trump, Suit led) {
    if (card.getKind() == CardKind.CARD_KIND_WIZARD) return 100;
    if (card.getKind() == CardKind.CARD_KIND_JESTER) return 0;
    if (card.getSuit() == trump) return 60 + card.getRank();
    if (card.getSuit() == led) return 30 + card.getRank();
    return card.getRank();
  }

  // The led suit of a trick: that of its first suited card, unless a Wizard came first.
  static Suit ledSuit(Trick trick) {
    for (Card card : trick.getCardsList()) {
      if (card.getKind() == CardKind.CARD_KIND_WIZARD) return Suit.SUIT_UNSPECIFIED;
      if (card.getKind() == CardKind.CARD_KIND_SUITED) return card.getSuit();
    }
    return Suit.SUIT_UNSPECIFIED;
  }

  // Bid: count the cards that should win a trick (Wizards, high trumps, top cards of the
  // other suits), scale to the tricks to be played (Trumps draws more cards), and bid the
  // legal number nearest to that (the first of two as near). legal_bids is not empty.
  static int chooseBid(BidRequest req) {
    SeatView view = req.getView();
    int top = view.getGame() == Game.GAME_WIZARD ? 13 : 14; // the deck's top rank
    int winners = 0;
    for (Card card : view.getHandList()) {
      if (card.getKind() == CardKind.CARD_KIND_WIZARD) {
        winners += 1;
      } else if (card.getKind() == CardKind.CARD_KIND_SUITED) {
        boolean trump = card.getSuit() == view.getTrump();
        if ((trump && card.getRank() + 3 >= top) || (!trump && card.getRank() == top)) winners += 1;
      }
    }
    int hand = Math.max(view.getHandCount(), 1);
    // half away from zero, as C++'s std::round (all values here are >= 0)
    double want = Math.floor((double) winners * view.getTricksInRound() / hand + 0.5);
    int best = req.getLegalBids(0);
    for (int bid : req.getLegalBidsList()) {
      if (Math.abs(bid - want) < Math.abs(best - want)) best = bid;
    }
    return best;
  }

  // Trump: the legal suit we hold most cards of (the first of them on a tie).
  static Suit chooseSuit(ChooseTrumpRequest req) {
    Suit best = req.getLegalSuits(0);
    long bestCount = -1;
    for (Suit suit : req.getLegalSuitsList()) {
      long count = req.getView().getHandList().stream().filter(c -> c.getSuit() == suit).count();
      if (count > bestCount) {
        best = suit;
        bestCount = count;
      }
    }
    return best;
  }

  // Play: while we still need tricks (or made no bid: Trumps without announce) the
  // strongest legal card, else the weakest. The answer is one of the legal cards.
  static Card chooseCard(PlayRequest req) {
    SeatView view = req.getView();
    Integer myBid = null;
    for (arena.v1.GameOuterClass.Bid bid : view.getBidsList()) {
      if (bid.getSeat() == view.getSeat()) myBid = bid.getTricks();
    }
    int won = view.getSeat() < view.getWonCount() ? view.getWon(view.getSeat()) : 0;
    boolean needTricks = myBid == null || won < myBid;
    Suit led = ledSuit(view.getTrick());
    Card best = req.getLegalCards(0);
    for (Card card : req.getLegalCardsList()) {
      int a = power(best, view.getTrump(), led);
      int b = power(card, view.getTrump(), led);
      if (needTricks ? b > a : b < a) best = card;
    }
    return best;
  }

  // -- state kept per (game_id, seat) ---------------------------------------------------

  // The bot needs no memory to play (every request carries the whole view), but it keeps
  // a small tally from the RoundEnded notifications, to show how state is kept: by
  // (game_id, seat), since one process may serve several games, and several seats of
  // one game, at once (calls arrive on several threads, hence synchronized).
  record Key(String gameId, int seat) {}

  static final class Tally {
    int rounds;
    int bidsMade;
  }

  static final class Memory {
    private final Map<Key, Tally> tallies = new HashMap<>();

    synchronized void roundEnded(RoundEndedRequest req) {
      boolean made = false;
      for (arena.v1.GameOuterClass.Bid bid : req.getBidsList()) {
        if (bid.getSeat() == req.getSeat() && req.getSeat() < req.getWonCount()) {
          made = bid.getTricks() == req.getWon(req.getSeat());
        }
      }
      Tally t = tallies.computeIfAbsent(new Key(req.getGameId(), req.getSeat()), k -> new Tally());
      t.rounds += 1;
      t.bidsMade += made ? 1 : 0;
    }

    synchronized Tally forget(String gameId, int seat) {
      Tally t = tallies.remove(new Key(gameId, seat));
      return t == null ? new Tally() : t;
    }
  }

  // -- the services ---------------------------------------------------------------------

  static final class BotService extends BotServiceGrpc.BotServiceImplBase {
    private final Memory memory = new Memory();

    @Override
    public void hello(HelloRequest req, StreamObserver<HelloResponse> out) {
      log("hello from referee " + req.getRefereeVersion() + " (protocol " + req.getProtocolVersion() + ")");
      // We use RoundEnded (the tally above), so we do not set skip_round_ended.
      answer(out, HelloResponse.newBuilder()
          .setName(NAME).setVersion(VERSION).setAuthor("trick-arena samples")
          .setProtocolVersion(ProtocolVersion.PROTOCOL_VERSION_1.getNumber())
          .addGames(Game.GAME_WIZARD).addGames(Game.GAME_TRUMPS).build());
    }

    @Override
    public void bid(BidRequest req, StreamObserver<BidResponse> out) {
      if (req.getLegalBidsCount() == 0) {
        empty(out, "legal_bids");
        return;
      }
      answer(out, BidResponse.newBuilder().setTricks(chooseBid(req)).build());
    }

    @Override
    public void chooseTrump(ChooseTrumpRequest req, StreamObserver<ChooseTrumpResponse> out) {
      if (req.getLegalSuitsCount() == 0) {
        empty(out, "legal_suits");
        return;
      }
      answer(out, ChooseTrumpResponse.newBuilder().setSuit(chooseSuit(req)).build());
    }

    @Override
    public void play(PlayRequest req, StreamObserver<PlayResponse> out) {
      if (req.getLegalCardsCount() == 0) {
        empty(out, "legal_cards");
        return;
      }
      answer(out, PlayResponse.newBuilder().setCard(chooseCard(req)).build());
    }

    @Override
    public void roundEnded(RoundEndedRequest req, StreamObserver<RoundEndedResponse> out) {
      memory.roundEnded(req);
      answer(out, RoundEndedResponse.getDefaultInstance());
    }

    @Override
    public void gameEnded(GameEndedRequest req, StreamObserver<GameEndedResponse> out) {
      Tally t = memory.forget(req.getGameId(), req.getSeat());
      int place = req.getSeat() < req.getPlacesCount() ? req.getPlaces(req.getSeat()) : 0;
      log("game " + req.getGameId() + " seat " + req.getSeat() + " over: place " + place + " of "
          + req.getPlayers() + ", rounds " + t.rounds + " (bids made " + t.bidsMade + ")"
          + (req.getForfeited() ? " (forfeited: " + req.getForfeitReason() + ")" : ""));
      answer(out, GameEndedResponse.getDefaultInstance());
    }

    private static <T> void answer(StreamObserver<T> out, T reply) {
      out.onNext(reply);
      out.onCompleted();
    }

    private static void empty(StreamObserver<?> out, String field) {
      out.onError(Status.INVALID_ARGUMENT.withDescription(field + " is empty").asRuntimeException());
    }
  }

  // The standard health service (grpc.health.v1.Health): "" and arena.v1.BotService are
  // SERVING as soon as the server listens, which is what the arena waits for; any other
  // name is NOT_FOUND. Watch sends the status once and leaves the stream open.
  static final class Health extends HealthGrpc.HealthImplBase {
    private static boolean known(String service) {
      return service.isEmpty() || service.equals(BotServiceGrpc.SERVICE_NAME);
    }

    private static HealthCheckResponse serving() {
      return HealthCheckResponse.newBuilder()
          .setStatus(HealthCheckResponse.ServingStatus.SERVING).build();
    }

    @Override
    public void check(HealthCheckRequest req, StreamObserver<HealthCheckResponse> out) {
      if (!known(req.getService())) {
        out.onError(Status.NOT_FOUND.withDescription("unknown service " + req.getService())
            .asRuntimeException());
        return;
      }
      out.onNext(serving());
      out.onCompleted();
    }

    @Override
    public void watch(HealthCheckRequest req, StreamObserver<HealthCheckResponse> out) {
      out.onNext(known(req.getService()) ? serving() : HealthCheckResponse.newBuilder()
          .setStatus(HealthCheckResponse.ServingStatus.SERVICE_UNKNOWN).build());
    }
  }

  // With ARENA_BOT_TOKEN set, every call of the bot service must carry the metadata
  // `authorization: Bearer <token>`; others are answered UNAUTHENTICATED. The health
  // service stays open (the interceptor wraps the bot service only). Compared in
  // constant time (MessageDigest.isEqual).
  static final class RequireToken implements ServerInterceptor {
    private static final Metadata.Key<String> AUTHORIZATION =
        Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
    private final byte[] expected;

    RequireToken(String token) {
      expected = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                       ServerCallHandler<Q, R> next) {
      String given = headers.get(AUTHORIZATION);
      if (given == null || !MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8), expected)) {
        call.close(Status.UNAUTHENTICATED.withDescription("missing or wrong bearer token"), new Metadata());
        return new ServerCall.Listener<Q>() {};
      }
      return next.startCall(call, headers);
    }
  }

  // -- the relay: a unix socket, or TLS ------------------------------------------------

  // Debian's Netty can serve neither of two things a bot may need: a unix socket (Netty
  // wants its native epoll library for that, which libnetty-java does not ship) and TLS
  // with ALPN (Debian's Netty has its JDK provider's ALPN support removed, and gRPC
  // insists on ALPN's "h2"). So gRPC listens on an in-process Netty address (LocalAddress)
  // and this relay joins each connection accepted by the JDK itself to a new Netty
  // LocalChannel to the server: a unix-domain socket (the JDK's own, Java 16+), or a TLS
  // server socket (the JDK's TLS, which does ALPN). Bytes from the client are read by a
  // thread of the connection's own; bytes from the server are written to the client on
  // the relay's event loop.
  interface Pipe {
    int read(byte[] buf) throws IOException; // -1 at the end

    void write(byte[] buf, int len) throws IOException;

    void close();
  }

  static final class Relay implements AutoCloseable {
    private final LocalAddress target;
    private final EventLoopGroup loops = new DefaultEventLoopGroup(1);
    private final List<AutoCloseable> listeners = new java.util.ArrayList<>();
    private Path socketFile;

    Relay(LocalAddress target) {
      this.target = target;
    }

    private static void daemon(String name, Runnable body) {
      Thread thread = new Thread(body, name);
      thread.setDaemon(true);
      thread.start();
    }

    // Serve the unix socket at path (the JDK's unix-domain channels).
    void serveUnix(Path path) throws IOException {
      ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      listener.bind(UnixDomainSocketAddress.of(path));
      listeners.add(listener);
      socketFile = path;
      daemon("relay-accept", () -> {
        while (true) {
          SocketChannel conn;
          try {
            conn = listener.accept();
          } catch (IOException closed) {
            return; // the relay was closed
          }
          join(new Pipe() {
            public int read(byte[] buf) throws IOException {
              return conn.read(ByteBuffer.wrap(buf));
            }

            public void write(byte[] buf, int len) throws IOException {
              ByteBuffer chunk = ByteBuffer.wrap(buf, 0, len);
              while (chunk.hasRemaining()) conn.write(chunk);
            }

            public void close() {
              try {
                conn.close();
              } catch (IOException ignored) {
                // already closed
              }
            }
          });
        }
      });
    }

    // Serve TLS on a TCP address, offering ALPN's "h2" (gRPC's clients insist on it);
    // the bound port.
    int serveTls(InetSocketAddress address, SSLContext tls) throws IOException {
      SSLServerSocket listener = (SSLServerSocket) tls.getServerSocketFactory().createServerSocket();
      SSLParameters parameters = listener.getSSLParameters();
      parameters.setApplicationProtocols(new String[] {"h2"});
      listener.setSSLParameters(parameters);
      listener.bind(address);
      listeners.add(listener);
      daemon("relay-accept", () -> {
        while (true) {
          Socket conn;
          try {
            conn = listener.accept();
          } catch (IOException closed) {
            return; // the relay was closed
          }
          daemon("relay-handshake", () -> {
            try {
              conn.setTcpNoDelay(true); // no Nagle: gRPC's small frames wait 40 ms without it
              ((SSLSocket) conn).startHandshake();
              InputStream in = conn.getInputStream();
              OutputStream out = conn.getOutputStream();
              join(new Pipe() {
                public int read(byte[] buf) throws IOException {
                  return in.read(buf);
                }

                public void write(byte[] buf, int len) throws IOException {
                  out.write(buf, 0, len);
                  out.flush();
                }

                public void close() {
                  try {
                    conn.close();
                  } catch (IOException ignored) {
                    // already closed
                  }
                }
              });
            } catch (IOException e) {
              log("TLS: " + e.getMessage());
              try {
                conn.close();
              } catch (IOException ignored) {
                // already closed
              }
            }
          });
        }
      });
      return listener.getLocalPort();
    }

    private void join(Pipe client) {
      Channel server;
      try {
        server = new Bootstrap().group(loops).channel(LocalChannel.class)
            .handler(new ChannelInboundHandlerAdapter() {
              @Override
              public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ByteBuf buf = (ByteBuf) msg;
                try {
                  byte[] bytes = new byte[buf.readableBytes()];
                  buf.readBytes(bytes);
                  client.write(bytes, bytes.length);
                } catch (IOException gone) {
                  ctx.close();
                } finally {
                  buf.release();
                }
              }

              @Override
              public void channelInactive(ChannelHandlerContext ctx) {
                client.close();
              }

              @Override
              public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                ctx.close();
              }
            })
            .connect(target).sync().channel();
      } catch (Exception e) {
        log("relay: cannot reach the server: " + e);
        client.close();
        return;
      }
      daemon("relay-read", () -> {
        byte[] buf = new byte[64 * 1024];
        try {
          for (int n; (n = client.read(buf)) >= 0; ) {
            if (n > 0) server.writeAndFlush(Unpooled.copiedBuffer(buf, 0, n));
          }
        } catch (IOException gone) {
          // the client hung up, or the relay was closed
        }
        server.close();
        client.close();
      });
    }

    @Override
    public void close() throws Exception {
      for (AutoCloseable listener : listeners) listener.close();
      if (socketFile != null) Files.deleteIfExists(socketFile); // the JDK leaves it behind
      loops.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
    }
  }

  // -- start up and shut down -----------------------------------------------------------

  // The address to listen on: --listen ADDR (or --listen=ADDR), else $ARENA_BOT_LISTEN.
  static String listenAddress(String[] args) {
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--listen") && i + 1 < args.length) return args[i + 1];
      if (args[i].startsWith("--listen=")) return args[i].substring("--listen=".length());
    }
    String env = System.getenv("ARENA_BOT_LISTEN");
    return env == null ? "" : env;
  }

  // host:port ([::1]:port for IPv6; an empty host is every address) as a socket address.
  static InetSocketAddress tcpAddress(String address) {
    int colon = address.lastIndexOf(':');
    if (colon < 0) throw new IllegalArgumentException("expected unix:PATH or HOST:PORT");
    String host = address.substring(0, colon).replaceAll("^\\[|\\]$", "");
    int port = Integer.parseInt(address.substring(colon + 1));
    return host.isEmpty() ? new InetSocketAddress(port) : new InetSocketAddress(host, port);
  }

  static void fail(int code, String message) {
    System.err.println(NAME + ": " + message);
    System.exit(code);
  }

  public static void main(String[] args) throws Exception {
    // SIGTERM and SIGINT complete `stop` (sun.misc.Signal runs the handler on a Java
    // thread of its own, so the shutdown below is done on the main thread, not in a
    // signal handler). Installed first: before it, SIGTERM would end the JVM with 143.
    CompletableFuture<String> stop = new CompletableFuture<>();
    for (String signal : List.of("TERM", "INT")) {
      sun.misc.Signal.handle(new sun.misc.Signal(signal), s -> stop.complete("SIG" + s.getName()));
    }

    NETTY_BOOTSTRAP.setLevel(Level.SEVERE);
    // Netty asks java.management for the pid, which our runtime (build/jre) leaves out.
    System.setProperty("io.netty.processId", Long.toString(ProcessHandle.current().pid()));

    String address = listenAddress(args);
    if (address.isEmpty()) fail(2, "no address: set ARENA_BOT_LISTEN or pass --listen ADDR");
    String cert = System.getenv("ARENA_BOT_TLS_CERT");
    String key = System.getenv("ARENA_BOT_TLS_KEY");
    String token = System.getenv("ARENA_BOT_TOKEN");
    boolean tls = cert != null || key != null;
    boolean unix = address.startsWith("unix:");
    if (tls && (cert == null || key == null || !new File(cert).canRead() || !new File(key).canRead())) {
      fail(2, "TLS needs ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY, both readable PEM files");
    }

    // gRPC listens on an in-process address behind the relay for a unix socket and for
    // TLS, or on the TCP address itself without TLS.
    InetSocketAddress tcp = null;
    if (!unix) {
      try {
        tcp = tcpAddress(address);
      } catch (IllegalArgumentException e) {
        fail(2, "cannot listen on " + address + ": " + e.getMessage());
      }
    } else if (tls) {
      fail(2, "TLS is for a TCP address (HOST:PORT), not a unix socket");
    }
    SSLContext tlsContext = null;
    if (tls) {
      try { // Netty reads the PEM files (a PKCS#8 key: BEGIN PRIVATE KEY); the JDK does TLS
        tlsContext = ((JdkSslContext) SslContextBuilder.forServer(new File(cert), new File(key))
            .sslProvider(SslProvider.JDK).build()).context();
      } catch (IOException | RuntimeException e) {
        fail(2, "TLS: cannot use ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY (PEM files, the key"
            + " in PKCS#8: openssl pkcs8 -topk8 -nocrypt): " + e.getMessage());
      }
    }
    boolean relayed = unix || tls;
    NettyServerBuilder builder;
    EventLoopGroup loops = null;
    LocalAddress local = new LocalAddress(NAME + "-" + ProcessHandle.current().pid());
    if (relayed) {
      loops = new DefaultEventLoopGroup(2);
      builder = NettyServerBuilder.forAddress(local).channelType(LocalServerChannel.class)
          .bossEventLoopGroup(loops).workerEventLoopGroup(loops);
    } else {
      builder = NettyServerBuilder.forAddress(tcp);
    }
    BotService bot = new BotService();
    builder.addService(token == null || token.isEmpty() ? bot.bindService()
        : ServerInterceptors.intercept(bot, new RequireToken(token)));
    builder.addService(new Health());

    Server server = null;
    Relay relay = relayed ? new Relay(local) : null;
    int port = 0;
    try {
      server = builder.build().start();
      if (unix) relay.serveUnix(Path.of(address.substring("unix:".length())));
      port = tls ? relay.serveTls(tcp, tlsContext) : unix ? 0 : server.getPort();
    } catch (IOException | RuntimeException e) {
      fail(1, "cannot listen on " + address + ": " + e.getMessage());
    }
    List<String> guards = new java.util.ArrayList<>();
    if (tls) guards.add("TLS");
    if (token != null && !token.isEmpty()) guards.add("token required");
    log("listening on " + address + (unix ? "" : " (port " + port + ")")
        + (guards.isEmpty() ? "" : " with " + String.join(", ", guards)));

    // Also stop when the process that started us is gone (an orphan is re-parented, so
    // its parent pid changes; inside the arena's sandbox the parent is pid 1 and there is
    // nothing to watch).
    long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(1L);
    if (parent > 1) {
      Thread watch = new Thread(() -> {
        while (!stop.isDone()) {
          long now = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(1L);
          if (now != parent) stop.complete("parent gone");
          try {
            Thread.sleep(250);
          } catch (InterruptedException e) {
            return;
          }
        }
      }, "parent-watch");
      watch.setDaemon(true);
      watch.start();
    }

    // Shut down: calls in progress get 100 ms to finish, and the server does not wait
    // longer for its clients to hang up (the arena ends a process only between its calls,
    // and it wants it gone well within a second).
    log(stop.get() + ": shutting down");
    if (relay != null) relay.close();
    server.shutdown();
    if (!server.awaitTermination(100, TimeUnit.MILLISECONDS)) {
      server.shutdownNow();
      server.awaitTermination(200, TimeUnit.MILLISECONDS);
    }
    if (loops != null) loops.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
    log("stopped");
    System.exit(0); // Netty's threads are not daemons: do not wait for them
  }
}
