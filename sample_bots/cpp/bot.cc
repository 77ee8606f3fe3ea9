// A sample trick-arena bot in C++: a gRPC server implementing arena.v1.BotService.
//
// It plays Wizard and Trumps with a simple strategy that is always legal, because every
// answer is picked from the legal actions the request lists. It serves the standard
// health service (the arena waits for it) and server reflection, and it ends cleanly on
// SIGTERM: the signals are blocked in every thread and awaited by one thread of our own
// with sigtimedwait, which then shuts the server down (nothing runs in a signal handler).
// Copy it and make it smarter.

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "arena/v1/bot.grpc.pb.h"

namespace v1 = arena::v1;

namespace {

const char kName[] = "cpp-sample";
const char kVersion[] = "1.0.0";

// Standard output is discarded by the arena; standard error goes to the bot's log file.
template <typename... Args>
void Log(const Args&... args) {
  std::ostringstream line;
  line << "[cpp-sample] ";
  (line << ... << args);
  line << '\n';
  std::cerr << line.str() << std::flush;
}

// -- the strategy -----------------------------------------------------------------------

// How strong a card is in the trick in progress: Wizard > trumps > led suit > others >
// Jester. `led` is the led suit, or SUIT_UNSPECIFIED when there is none (yet). A suited
// card never has SUIT_UNSPECIFIED, so "no trump" matches no card.
int Power(const v1::Card& card, v1::Suit trump, v1::Suit led) {
  if (card.kind() == v1::CARD_KIND_WIZARD) return 100;
  if (card.kind() == v1::CARD_KIND_JESTER) return 0;
  if (card.suit() == trump) return 60 + static_cast<int>(card.rank());
  if (card.suit() == led) return 30 + static_cast<int>(card.rank());
  return static_cast<int>(card.rank());
}

// The led suit of a trick: that of its first suited card, unless a Wizard came first.
v1::Suit LedSuit(const v1::Trick& trick) {
  for (const v1::Card& card : trick.cards()) {
    if (card.kind() == v1::CARD_KIND_WIZARD) return v1::SUIT_UNSPECIFIED;
    if (card.kind() == v1::CARD_KIND_SUITED) return card.suit();
  }
  return v1::SUIT_UNSPECIFIED;
}

// Bid: count the cards that should win a trick (Wizards, high trumps, top cards of the
// other suits), scale to the tricks to be played (Trumps draws more cards), and bid the
// legal number nearest to that (legal_bids is never empty).
uint32_t ChooseBid(const v1::BidRequest& req) {
  const v1::SeatView& view = req.view();
  const uint32_t top = view.game() == v1::GAME_WIZARD ? 13 : 14;  // the deck's top rank
  int winners = 0;
  for (const v1::Card& card : view.hand()) {
    if (card.kind() == v1::CARD_KIND_WIZARD) {
      winners += 1;
    } else if (card.kind() == v1::CARD_KIND_SUITED) {
      const bool trump = card.suit() == view.trump();
      if ((trump && card.rank() + 3 >= top) || (!trump && card.rank() == top)) winners += 1;
    }
  }
  const int hand = std::max(view.hand_size(), 1);
  const double want = std::round(static_cast<double>(winners) * view.tricks_in_round() / hand);
  uint32_t best = req.legal_bids(0);
  for (uint32_t bid : req.legal_bids()) {
    if (std::fabs(bid - want) < std::fabs(best - want)) best = bid;
  }
  return best;
}

// Trump: the legal suit we hold most cards of (the first of them on a tie).
v1::Suit ChooseSuit(const v1::ChooseTrumpRequest& req) {
  v1::Suit best = v1::SUIT_UNSPECIFIED;
  int best_count = -1;
  for (int s : req.legal_suits()) {
    const auto suit = static_cast<v1::Suit>(s);
    const auto count = std::count_if(req.view().hand().begin(), req.view().hand().end(),
                                     [&](const v1::Card& c) { return c.suit() == suit; });
    if (count > best_count) {
      best = suit;
      best_count = static_cast<int>(count);
    }
  }
  return best;
}

// Play: while we still need tricks (or made no bid: Trumps without announce) the
// strongest legal card, else the weakest. The answer is a copy of a legal card.
const v1::Card& ChooseCard(const v1::PlayRequest& req) {
  const v1::SeatView& view = req.view();
  std::optional<uint32_t> my_bid;
  for (const v1::Bid& bid : view.bids()) {
    if (bid.seat() == view.seat()) my_bid = bid.tricks();
  }
  const uint32_t won = static_cast<int>(view.seat()) < view.won_size() ? view.won(view.seat()) : 0;
  const bool need_tricks = !my_bid || won < *my_bid;
  const v1::Suit led = LedSuit(view.trick());
  const v1::Card* best = &req.legal_cards(0);
  for (const v1::Card& card : req.legal_cards()) {
    const int a = Power(*best, view.trump(), led), b = Power(card, view.trump(), led);
    if (need_tricks ? b > a : b < a) best = &card;
  }
  return *best;
}

// -- state kept per (game_id, seat) -----------------------------------------------------

// The bot needs no memory to play (every request carries the whole view), but it keeps a
// small tally from the RoundEnded notifications, to show how state is kept: by
// (game_id, seat), since one process may serve several games, and several seats of one
// game, at once (calls arrive concurrently on gRPC's threads, hence the mutex).
struct Tally {
  int rounds = 0;
  int bids_made = 0;
};

class Memory {
 public:
  void RoundEnded(const v1::RoundEndedRequest& req) {
    bool made = false;
    for (const v1::Bid& bid : req.bids()) {
      if (bid.seat() == req.seat() && static_cast<int>(req.seat()) < req.won_size()) {
        made = bid.tricks() == req.won(req.seat());
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    Tally& t = tallies_[{req.game_id(), req.seat()}];
    t.rounds += 1;
    t.bids_made += made ? 1 : 0;
  }

  Tally Forget(const std::string& game_id, uint32_t seat) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tallies_.find({game_id, seat});
    if (it == tallies_.end()) return Tally{};
    Tally t = it->second;
    tallies_.erase(it);
    return t;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, uint32_t>, Tally> tallies_;
};

// -- the service ------------------------------------------------------------------------

// With ARENA_BOT_TOKEN set, every call of the bot service must carry the metadata
// `authorization: Bearer <token>`; others are answered UNAUTHENTICATED. The health
// service stays open. Compared in constant time (for a given length).
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

class BotServiceImpl final : public v1::BotService::Service {
 public:
  explicit BotServiceImpl(std::string token) : token_(std::move(token)) {}

  grpc::Status Hello(grpc::ServerContext* ctx, const v1::HelloRequest* req,
                     v1::HelloResponse* resp) override {
    if (!Allowed(ctx)) return Refused();
    Log("hello from referee ", req->referee_version(), " (protocol ", req->protocol_version(), ")");
    resp->set_name(kName);
    resp->set_version(kVersion);
    resp->set_author("trick-arena samples");
    resp->set_protocol_version(v1::PROTOCOL_VERSION_1);
    resp->add_games(v1::GAME_WIZARD);
    resp->add_games(v1::GAME_TRUMPS);
    // We use RoundEnded (the tally above), so we do not set skip_round_ended.
    return grpc::Status::OK;
  }

  grpc::Status Bid(grpc::ServerContext* ctx, const v1::BidRequest* req,
                   v1::BidResponse* resp) override {
    if (!Allowed(ctx)) return Refused();
    if (req->legal_bids_size() == 0) return Empty("legal_bids");
    resp->set_tricks(ChooseBid(*req));
    return grpc::Status::OK;
  }

  grpc::Status ChooseTrump(grpc::ServerContext* ctx, const v1::ChooseTrumpRequest* req,
                           v1::ChooseTrumpResponse* resp) override {
    if (!Allowed(ctx)) return Refused();
    if (req->legal_suits_size() == 0) return Empty("legal_suits");
    resp->set_suit(ChooseSuit(*req));
    return grpc::Status::OK;
  }

  grpc::Status Play(grpc::ServerContext* ctx, const v1::PlayRequest* req,
                    v1::PlayResponse* resp) override {
    if (!Allowed(ctx)) return Refused();
    if (req->legal_cards_size() == 0) return Empty("legal_cards");
    *resp->mutable_card() = ChooseCard(*req);
    return grpc::Status::OK;
  }

  grpc::Status RoundEnded(grpc::ServerContext* ctx, const v1::RoundEndedRequest* req,
                          v1::RoundEndedResponse*) override {
    if (!Allowed(ctx)) return Refused();
    memory_.RoundEnded(*req);
    return grpc::Status::OK;
  }

  grpc::Status GameEnded(grpc::ServerContext* ctx, const v1::GameEndedRequest* req,
                         v1::GameEndedResponse*) override {
    if (!Allowed(ctx)) return Refused();
    const Tally t = memory_.Forget(req->game_id(), req->seat());
    const uint32_t place = static_cast<int>(req->seat()) < req->places_size() ? req->places(req->seat()) : 0;
    Log("game ", req->game_id(), " seat ", req->seat(), " over: place ", place, " of ",
        req->players(), ", rounds ", t.rounds, " (bids made ", t.bids_made, ")",
        req->forfeited() ? " (forfeited: " + req->forfeit_reason() + ")" : std::string());
    return grpc::Status::OK;
  }

 private:
  bool Allowed(grpc::ServerContext* ctx) const {
    if (token_.empty()) return true;
    const auto& meta = ctx->client_metadata();
    auto it = meta.find("authorization");
    if (it == meta.end()) return false;
    return SameSecret(std::string(it->second.data(), it->second.size()), "Bearer " + token_);
  }
  static grpc::Status Refused() {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong bearer token");
  }
  static grpc::Status Empty(const char* field) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + " is empty");
  }

  const std::string token_;
  Memory memory_;
};

// -- start up and shut down -------------------------------------------------------------

// The address to listen on: --listen ADDR (or --listen=ADDR), else $ARENA_BOT_LISTEN.
// gRPC C++ takes the arena's `unix:/abs/path` as it is, and `host:port` too.
std::string ListenAddress(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--listen" && i + 1 < argc) return argv[i + 1];
    if (arg.rfind("--listen=", 0) == 0) return arg.substr(9);
  }
  const char* env = std::getenv("ARENA_BOT_LISTEN");
  return env ? env : "";
}

bool ReadFile(const char* path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// TLS when ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY name PEM files (a bot on your own
// machine, entered as grpcs://HOST:PORT); plaintext otherwise (the arena's unix socket).
std::shared_ptr<grpc::ServerCredentials> Credentials(bool* ok) {
  *ok = true;
  const char* cert = std::getenv("ARENA_BOT_TLS_CERT");
  const char* key = std::getenv("ARENA_BOT_TLS_KEY");
  if (!cert && !key) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (!cert || !key || !ReadFile(cert, &pair.cert_chain) || !ReadFile(key, &pair.private_key)) {
    *ok = false;
    return nullptr;
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back(pair);
  return grpc::SslServerCredentials(options);
}

// Wait for SIGTERM or SIGINT (blocked in every thread, so only sigtimedwait takes them),
// or for the process that started us to be gone (an orphan is re-parented, so its
// parent pid changes; inside the arena's sandbox the parent is pid 1 and there is
// nothing to watch). Then shut the server down: calls in progress get 100 ms to finish,
// and the server does not wait longer for its clients to hang up (the arena ends a
// process only between its calls, and it wants it gone well within a second).
void AwaitStop(grpc::Server* server, const sigset_t* signals) {
  const pid_t parent = getppid();
  const timespec tick{0, 250 * 1000 * 1000};
  std::string why;
  while (why.empty()) {
    const int signo = sigtimedwait(signals, nullptr, &tick);
    if (signo > 0) {
      why = strsignal(signo);
    } else if (errno == EAGAIN && parent > 1 && getppid() != parent) {
      why = "parent gone";
    }  // EINTR (a SIGSTOP/SIGCONT between calls) or the tick: wait again
  }
  Log(why, ": shutting down");
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
}

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals before any thread exists: gRPC's threads inherit the mask,
  // so the signals stay pending until AwaitStop takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string address = ListenAddress(argc, argv);
  if (address.empty()) {
    std::fprintf(stderr, "cpp-sample: no address: set ARENA_BOT_LISTEN or pass --listen ADDR\n");
    return 2;
  }
  bool creds_ok = false;
  auto credentials = Credentials(&creds_ok);
  if (!creds_ok) {
    std::fprintf(stderr, "cpp-sample: TLS needs ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY, both readable PEM files\n");
    return 2;
  }
  const char* token_env = std::getenv("ARENA_BOT_TOKEN");
  BotServiceImpl service(token_env ? token_env : "");

  // The standard health service (grpc.health.v1.Health): "" is SERVING once the server
  // has started, which is what the arena waits for.
  grpc::EnableDefaultHealthCheckService(true);
  // Server reflection, so generic tools (grpcurl, grpcui) can list and call the service.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, credentials, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "cpp-sample: cannot listen on %s\n", address.c_str());
    return 1;
  }
  server->GetHealthCheckService()->SetServingStatus("arena.v1.BotService", true);
  Log("listening on ", address,
      address.rfind("unix:", 0) == 0 ? std::string() : " (port " + std::to_string(port) + ")",
      token_env && *token_env ? " with token required" : "");

  std::thread stopper(AwaitStop, server.get(), &signals);
  server->Wait();  // returns once AwaitStop has shut the server down
  stopper.join();
  Log("stopped");
  return 0;
}
