// A sample trick-arena bot in Go: a gRPC server implementing arena.v1.BotService.
//
// It plays Wizard and Trumps with a simple strategy that is always legal, because every
// answer is picked from the legal actions the request lists (the same strategy as the
// C++ and Node.js samples). It serves the standard health service (the arena waits for
// it) and server reflection, and it ends cleanly on SIGTERM. Copy it and make it smarter.
//
// Build: `make` in this folder (stubs generated from proto/ into build/, then `go build`
// in GOPATH mode against Debian's Go packages); see README.md.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	pb "trickarena/arenav1"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

const (
	name    = "go-sample"
	version = "1.0.0"
)

// Standard output is discarded by the arena; standard error goes to the bot's log file.
var logger = log.New(os.Stderr, "["+name+"] ", 0)

// -- the strategy -----------------------------------------------------------------------

// power says how strong a card is in the trick in progress: Wizard > trumps > led suit >
// others > Jester. led is the led suit, or SUIT_UNSPECIFIED when there is none (yet). A
// suited card never has SUIT_UNSPECIFIED, so "no trump" matches no card.
func power(card *pb.Card, trump, led pb.Suit) int {
	switch card.GetKind() {
	case pb.CardKind_CARD_KIND_WIZARD:
		return 100
	case pb.CardKind_CARD_KIND_JESTER:
		return 0
	}
	rank := int(card.GetRank())
	switch card.GetSuit() {
	case trump:
		return 60 + rank
	case led:
		return 30 + rank
	}
	return rank
}

// ledSuit is the led suit of a trick: that of its first suited card, unless a Wizard
// came first.
func ledSuit(trick *pb.Trick) pb.Suit {
	for _, card := range trick.GetCards() {
		switch card.GetKind() {
		case pb.CardKind_CARD_KIND_WIZARD:
			return pb.Suit_SUIT_UNSPECIFIED
		case pb.CardKind_CARD_KIND_SUITED:
			return card.GetSuit()
		}
	}
	return pb.Suit_SUIT_UNSPECIFIED
}

// chooseBid counts the cards that should win a trick (Wizards, high trumps, top cards of
// the other suits), scales that to the tricks to be played (Trumps draws more cards), and
// bids the legal number nearest to it (the first of two as near). legal is not empty.
func chooseBid(req *pb.BidRequest) uint32 {
	view := req.GetView()
	top := uint32(14) // the deck's top rank
	if view.GetGame() == pb.Game_GAME_WIZARD {
		top = 13
	}
	winners := 0
	for _, card := range view.GetHand() {
		switch card.GetKind() {
		case pb.CardKind_CARD_KIND_WIZARD:
			winners++
		case pb.CardKind_CARD_KIND_SUITED:
			trump := card.GetSuit() == view.GetTrump()
			if (trump && card.GetRank()+3 >= top) || (!trump && card.GetRank() == top) {
				winners++
			}
		}
	}
	hand := len(view.GetHand())
	if hand < 1 {
		hand = 1
	}
	want := math.Round(float64(winners) * float64(view.GetTricksInRound()) / float64(hand))
	legal := req.GetLegalBids()
	best := legal[0]
	for _, bid := range legal {
		if math.Abs(float64(bid)-want) < math.Abs(float64(best)-want) {
			best = bid
		}
	}
	return best
}

// chooseSuit is the legal suit we hold most cards of (the first of them on a tie).
func chooseSuit(req *pb.ChooseTrumpRequest) pb.Suit {
	best, bestCount := req.GetLegalSuits()[0], -1
	for _, suit := range req.GetLegalSuits() {
		count := 0
		for _, card := range req.GetView().GetHand() {
			if card.GetSuit() == suit {
				count++
			}
		}
		if count > bestCount {
			best, bestCount = suit, count
		}
	}
	return best
}

// chooseCard: while we still need tricks (or made no bid: Trumps without announce) the
// strongest legal card, else the weakest. The answer is one of the legal cards.
func chooseCard(req *pb.PlayRequest) *pb.Card {
	view := req.GetView()
	seat := view.GetSeat()
	var bid *uint32
	for _, b := range view.GetBids() {
		if b.GetSeat() == seat {
			tricks := b.GetTricks()
			bid = &tricks
		}
	}
	won := uint32(0)
	if int(seat) < len(view.GetWon()) {
		won = view.GetWon()[seat]
	}
	needTricks := bid == nil || won < *bid
	led := ledSuit(view.GetTrick())
	legal := req.GetLegalCards()
	best := legal[0]
	for _, card := range legal {
		a, b := power(best, view.GetTrump(), led), power(card, view.GetTrump(), led)
		if (needTricks && b > a) || (!needTricks && b < a) {
			best = card
		}
	}
	return best
}

// -- state kept per (game_id, seat) -----------------------------------------------------

// The bot needs no memory to play (every request carries the whole view), but it keeps a
// small tally from the RoundEnded notifications, to show how state is kept: by
// (game_id, seat), since one process may serve several games, and several seats of one
// game, at once (gRPC answers calls on several goroutines, hence the mutex).
type key struct {
	gameID string
	seat   uint32
}

type tally struct {
	rounds, bidsMade int
}

type memory struct {
	mu      sync.Mutex
	tallies map[key]tally
}

func (m *memory) roundEnded(req *pb.RoundEndedRequest) {
	made := false
	seat := req.GetSeat()
	for _, bid := range req.GetBids() {
		if bid.GetSeat() == seat && int(seat) < len(req.GetWon()) {
			made = bid.GetTricks() == req.GetWon()[seat]
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tallies[key{req.GetGameId(), seat}]
	t.rounds++
	if made {
		t.bidsMade++
	}
	m.tallies[key{req.GetGameId(), seat}] = t
}

func (m *memory) forget(gameID string, seat uint32) tally {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tallies[key{gameID, seat}]
	delete(m.tallies, key{gameID, seat})
	return t
}

// -- the service ------------------------------------------------------------------------

type botService struct {
	pb.UnimplementedBotServiceServer
	memory memory
}

func empty(field string) error {
	return status.Errorf(codes.InvalidArgument, "%s is empty", field)
}

func (s *botService) Hello(_ context.Context, req *pb.HelloRequest) (*pb.HelloResponse, error) {
	logger.Printf("hello from referee %s (protocol %d)", req.GetRefereeVersion(), req.GetProtocolVersion())
	// We use RoundEnded (the tally above), so we do not set SkipRoundEnded.
	return &pb.HelloResponse{
		Name: name, Version: version, Author: "trick-arena samples",
		ProtocolVersion: uint32(pb.ProtocolVersion_PROTOCOL_VERSION_1),
		Games:           []pb.Game{pb.Game_GAME_WIZARD, pb.Game_GAME_TRUMPS},
	}, nil
}

func (s *botService) Bid(_ context.Context, req *pb.BidRequest) (*pb.BidResponse, error) {
	if len(req.GetLegalBids()) == 0 {
		return nil, empty("legal_bids")
	}
	return &pb.BidResponse{Tricks: chooseBid(req)}, nil
}

func (s *botService) ChooseTrump(_ context.Context, req *pb.ChooseTrumpRequest) (*pb.ChooseTrumpResponse, error) {
	if len(req.GetLegalSuits()) == 0 {
		return nil, empty("legal_suits")
	}
	return &pb.ChooseTrumpResponse{Suit: chooseSuit(req)}, nil
}

func (s *botService) Play(_ context.Context, req *pb.PlayRequest) (*pb.PlayResponse, error) {
	if len(req.GetLegalCards()) == 0 {
		return nil, empty("legal_cards")
	}
	return &pb.PlayResponse{Card: chooseCard(req)}, nil
}

func (s *botService) RoundEnded(_ context.Context, req *pb.RoundEndedRequest) (*pb.RoundEndedResponse, error) {
	s.memory.roundEnded(req)
	return &pb.RoundEndedResponse{}, nil
}

func (s *botService) GameEnded(_ context.Context, req *pb.GameEndedRequest) (*pb.GameEndedResponse, error) {
	t := s.memory.forget(req.GetGameId(), req.GetSeat())
	place := uint32(0)
	if int(req.GetSeat()) < len(req.GetPlaces()) {
		place = req.GetPlaces()[req.GetSeat()]
	}
	forfeited := ""
	if req.GetForfeited() {
		forfeited = " (forfeited: " + req.GetForfeitReason() + ")"
	}
	logger.Printf("game %s seat %d over: place %d of %d, rounds %d (bids made %d)%s",
		req.GetGameId(), req.GetSeat(), place, req.GetPlayers(), t.rounds, t.bidsMade, forfeited)
	return &pb.GameEndedResponse{}, nil
}

// requireToken: with ARENA_BOT_TOKEN set, every call of the bot service must carry the
// metadata `authorization: Bearer <token>`; others are answered UNAUTHENTICATED. The
// health service stays open. Compared in constant time.
func requireToken(token string) grpc.UnaryServerInterceptor {
	expected := []byte("Bearer " + token)
	return func(ctx context.Context, req interface{}, info *grpc.UnaryServerInfo,
		handler grpc.UnaryHandler) (interface{}, error) {
		if strings.HasPrefix(info.FullMethod, "/arena.v1.BotService/") {
			md, _ := metadata.FromIncomingContext(ctx)
			given := md.Get("authorization")
			if len(given) == 0 || subtle.ConstantTimeCompare([]byte(given[0]), expected) != 1 {
				return nil, status.Error(codes.Unauthenticated, "missing or wrong bearer token")
			}
		}
		return handler(ctx, req)
	}
}

// -- start up and shut down -------------------------------------------------------------

// listen opens the address: `unix:/abs/path` (the arena's ARENA_BOT_LISTEN) or
// `host:port`. grpc-go serves on any net.Listener, so the `unix:` prefix is taken off.
func listen(address string) (net.Listener, error) {
	if strings.HasPrefix(address, "unix:") {
		return net.Listen("unix", strings.TrimPrefix(address, "unix:"))
	}
	return net.Listen("tcp", address)
}

// serverOptions: TLS when ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY name PEM files (a bot
// on your own machine, entered as grpcs://HOST:PORT), plaintext otherwise (the arena's
// unix socket); the token check when ARENA_BOT_TOKEN is set.
func serverOptions() ([]grpc.ServerOption, []string, error) {
	var options []grpc.ServerOption
	var guards []string
	cert, key := os.Getenv("ARENA_BOT_TLS_CERT"), os.Getenv("ARENA_BOT_TLS_KEY")
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, nil, errors.New("TLS needs ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY, both readable PEM files")
		}
		creds, err := credentials.NewServerTLSFromFile(cert, key)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS needs ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY, both readable PEM files: %v", err)
		}
		options = append(options, grpc.Creds(creds))
		guards = append(guards, "TLS")
	}
	if token := os.Getenv("ARENA_BOT_TOKEN"); token != "" {
		options = append(options, grpc.UnaryInterceptor(requireToken(token)))
		guards = append(guards, "token required")
	}
	return options, guards, nil
}

// awaitStop waits for SIGTERM or SIGINT, or for the process that started us to be gone
// (an orphan is re-parented, so its parent pid changes; inside the arena's sandbox the
// parent is pid 1 and there is nothing to watch), then says why.
func awaitStop() string {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	parent := os.Getppid()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case sig := <-signals:
			return sig.String()
		case <-tick.C:
			if parent > 1 && os.Getppid() != parent {
				return "parent gone"
			}
		}
	}
}

func main() {
	// One line for any mistake on the command line (the flag package's usage is longer).
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	address := flags.String("listen", os.Getenv("ARENA_BOT_LISTEN"), "unix:PATH or HOST:PORT")
	if err := flags.Parse(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (usage: %s [--listen ADDR])\n", name, err, name)
		os.Exit(2)
	}
	if *address == "" {
		fmt.Fprintf(os.Stderr, "%s: no address: set ARENA_BOT_LISTEN or pass --listen ADDR\n", name)
		os.Exit(2)
	}
	options, guards, err := serverOptions()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	lis, err := listen(*address)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot listen on %s: %v\n", name, *address, err)
		os.Exit(1)
	}

	server := grpc.NewServer(options...)
	pb.RegisterBotServiceServer(server, &botService{memory: memory{tallies: map[key]tally{}}})
	// The standard health service (grpc.health.v1.Health): "" is SERVING from the start,
	// which is what the arena waits for; we say so for arena.v1.BotService too.
	hs := health.NewServer()
	hs.SetServingStatus("arena.v1.BotService", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, hs)
	// Server reflection, so generic tools (grpcurl, grpcui) can list and call the service.
	reflection.Register(server)

	where := *address
	if tcp, ok := lis.Addr().(*net.TCPAddr); ok {
		where += fmt.Sprintf(" (port %d)", tcp.Port)
	}
	if len(guards) > 0 {
		where += " with " + strings.Join(guards, ", ")
	}
	logger.Printf("listening on %s", where)

	// Shut down on SIGTERM: calls in progress get 100 ms to finish, and the server does
	// not wait longer for its clients to hang up (the arena ends a process only between
	// its calls, and it wants it gone well within a second).
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		logger.Printf("%s: shutting down", awaitStop())
		hs.Shutdown()
		timer := time.AfterFunc(100*time.Millisecond, server.Stop)
		server.GracefulStop()
		timer.Stop()
	}()
	if err := server.Serve(lis); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	<-stopped // Serve returns as the stop begins; wait for it to end
	logger.Print("stopped")
}
