#!/usr/bin/env ruby
# frozen_string_literal: true

# A sample trick-arena bot in Ruby: a gRPC server implementing arena.v1.BotService, on
# Debian's ruby-grpc and ruby-google-protobuf. It plays Wizard and Trumps with a simple
# strategy that is always legal, because every answer is picked from the legal actions
# the request lists (the strategy of the Node.js, Go, Java and C++ samples). It serves
# the standard health service (the arena waits for it) and ends at once on SIGTERM.
# Copy the folder and make it smarter.
#
# The stubs in lib/arena/v1/ are generated from this folder's copy of proto/ by Debian's
# ruby-grpc-tools (`make` in this folder regenerates them); the sandbox shows a bot only
# its own folder, so nothing is loaded from elsewhere in the repository.

$LOAD_PATH.unshift(File.join(__dir__, 'lib'))

require 'grpc'
require 'grpc/health/checker'
require 'openssl'
require 'arena/v1/bot_services_pb'

NAME = 'ruby-sample'
VERSION = '1.0.0'

# Standard output is discarded by the arena; standard error goes to the bot's log file.
$stderr.sync = true
def log(text)
  warn "[#{NAME}] #{text}"
end

# -- the strategy -----------------------------------------------------------------------

# How strong a card is in the trick in progress: Wizard > trumps > led suit > others >
# Jester. `led` is the led suit, or nil when there is none (yet). Enum values are
# symbols (:SUIT_HEARTS, :CARD_KIND_WIZARD); a suited card never has :SUIT_UNSPECIFIED,
# so "no trump" matches no card.
def power(card, trump, led)
  return 100 if card.kind == :CARD_KIND_WIZARD
  return 0 if card.kind == :CARD_KIND_JESTER
  return 60 + card.rank if card.suit == trump
  return 30 + card.rank if card.suit == led

  card.rank
end

# The led suit of a trick: that of its first suited card, unless a Wizard came first.
def led_suit(trick)
  return nil if trick.nil?

  trick.cards.each do |card|
    return nil if card.kind == :CARD_KIND_WIZARD
    return card.suit if card.kind == :CARD_KIND_SUITED
  end
  nil
end

# Bid: count the cards that should win a trick (Wizards, high trumps, top cards of the
# other suits), scale to the tricks to be played (Trumps draws more cards), and bid the
# legal number nearest to that (the first of two as near).
def choose_bid(req)
  view = req.view
  top = view.game == :GAME_WIZARD ? 13 : 14 # the deck's top rank
  winners = view.hand.count do |card|
    card.kind == :CARD_KIND_WIZARD ||
      (card.kind == :CARD_KIND_SUITED &&
       (card.suit == view.trump ? card.rank + 3 >= top : card.rank == top))
  end
  want = (winners * view.tricks_in_round.to_f / [view.hand.size, 1].max).round
  req.legal_bids.min_by.with_index { |bid, i| [(bid - want).abs, i] }
end

# Trump: the legal suit we hold most cards of (the first of them on a tie).
def choose_suit(req)
  count = ->(suit) { req.view.hand.count { |card| card.suit == suit } }
  req.legal_suits.max_by.with_index { |suit, i| [count.call(suit), -i] }
end

# Play: while we still need tricks (or made no bid: Trumps without announce) the
# strongest legal card, else the weakest. The answer is one of the legal cards.
def choose_card(req)
  view = req.view
  bid = view.bids.reverse_each.find { |b| b.seat == view.seat }
  need_tricks = bid.nil? || (view.won[view.seat] || 0) < bid.tricks
  led = led_suit(view.trick)
  score = ->(card) { power(card, view.trump, led) }
  legal = req.legal_cards.to_a
  if need_tricks
    legal.max_by.with_index { |card, i| [score.call(card), -i] }
  else
    legal.min_by.with_index { |card, i| [score.call(card), i] }
  end
end

# -- state kept per (game_id, seat) -----------------------------------------------------

# The bot needs no memory to play (every request carries the whole view), but it keeps a
# small tally from the RoundEnded notifications, to show how state is kept: by
# (game_id, seat), since one process may serve several games, and several seats of one
# game, at once (gRPC answers calls on a pool of threads, hence the mutex).
class Tallies
  def initialize
    @mutex = Mutex.new
    @tallies = Hash.new { |hash, key| hash[key] = { rounds: 0, bids_made: 0 } }
  end

  def round_ended(req)
    bid = req.bids.reverse_each.find { |b| b.seat == req.seat }
    made = !bid.nil? && bid.tricks == req.won[req.seat]
    @mutex.synchronize do
      tally = @tallies[[req.game_id, req.seat]]
      tally[:rounds] += 1
      tally[:bids_made] += 1 if made
    end
  end

  def forget(game_id, seat)
    @mutex.synchronize { @tallies.delete([game_id, seat]) || { rounds: 0, bids_made: 0 } }
  end
end

# -- the service ------------------------------------------------------------------------

# With ARENA_BOT_TOKEN set, every call of the bot service must carry the metadata
# `authorization: Bearer <token>`; others are answered UNAUTHENTICATED. The health
# service stays open. Compared in constant time (OpenSSL.secure_compare).
TOKEN = ENV.fetch('ARENA_BOT_TOKEN', '')

class BotService < Arena::V1::BotService::Service
  def initialize
    super
    @tallies = Tallies.new
  end

  def hello(req, call)
    guard(call)
    log "hello from referee #{req.referee_version} (protocol #{req.protocol_version})"
    # We use RoundEnded (the tally above), so we do not set skip_round_ended.
    Arena::V1::HelloResponse.new(name: NAME, version: VERSION, author: 'trick-arena samples',
                                 protocol_version: 1, games: %i[GAME_WIZARD GAME_TRUMPS])
  end

  def bid(req, call)
    guard(call)
    nonempty(req.legal_bids, 'legal_bids')
    Arena::V1::BidResponse.new(tricks: choose_bid(req))
  end

  def choose_trump(req, call)
    guard(call)
    nonempty(req.legal_suits, 'legal_suits')
    Arena::V1::ChooseTrumpResponse.new(suit: choose_suit(req))
  end

  def play(req, call)
    guard(call)
    nonempty(req.legal_cards, 'legal_cards')
    Arena::V1::PlayResponse.new(card: choose_card(req))
  end

  def round_ended(req, call)
    guard(call)
    @tallies.round_ended(req)
    Arena::V1::RoundEndedResponse.new
  end

  def game_ended(req, call)
    guard(call)
    tally = @tallies.forget(req.game_id, req.seat)
    forfeited = req.forfeited ? " (forfeited: #{req.forfeit_reason})" : ''
    log "game #{req.game_id} seat #{req.seat} over: place #{req.places[req.seat]} of " \
        "#{req.players}, rounds #{tally[:rounds]} (bids made #{tally[:bids_made]})#{forfeited}"
    Arena::V1::GameEndedResponse.new
  end

  private

  def guard(call)
    return if TOKEN.empty?

    given = call.metadata['authorization'].to_s
    return if OpenSSL.secure_compare(given, "Bearer #{TOKEN}")

    raise GRPC::Unauthenticated, 'missing or wrong bearer token'
  end

  def nonempty(list, field)
    raise GRPC::InvalidArgument, "#{field} is empty" if list.empty?
  end
end

# -- start up and shut down -------------------------------------------------------------

def listen_address(argv)
  argv.each_with_index do |arg, i|
    return argv[i + 1] if arg == '--listen' && argv[i + 1]
    return arg.delete_prefix('--listen=') if arg.start_with?('--listen=')
  end
  ENV.fetch('ARENA_BOT_LISTEN', nil)
end

# TLS when ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY name PEM files (a bot on your own
# machine, entered as grpcs://HOST:PORT); plaintext otherwise (the arena's unix socket).
def credentials
  cert, key = ENV.values_at('ARENA_BOT_TLS_CERT', 'ARENA_BOT_TLS_KEY')
  return :this_port_is_insecure if cert.to_s.empty? && key.to_s.empty?

  GRPC::Core::ServerCredentials.new(
    nil, [{ private_key: File.read(key.to_s), cert_chain: File.read(cert.to_s) }], false
  )
rescue SystemCallError, ArgumentError, RuntimeError => e
  abort "#{NAME}: TLS needs ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY, both readable PEM " \
        "files: #{e.message}"
end

# Wait for SIGTERM or SIGINT, or for the process that started us to be gone (an orphan
# is re-parented, so its parent pid changes; inside the arena's sandbox the parent is
# pid 1 and there is nothing to watch); then say why. A signal handler may not take a
# mutex, so it only writes the signal's name into a pipe that this waits on.
def await_stop(reader)
  parent = Process.ppid
  loop do
    return "SIG#{reader.gets.to_s.strip}" if reader.wait_readable(0.25)
    return 'parent gone' if parent > 1 && Process.ppid != parent
  end
end

def main
  address = listen_address(ARGV)
  if address.to_s.empty?
    warn "#{NAME}: no address: set ARENA_BOT_LISTEN or pass --listen ADDR"
    exit 2
  end
  # Workers for concurrent calls; the arena counts threads against its process limit.
  server = GRPC::RpcServer.new(pool_size: 8, poll_period: 0.1, pool_keep_alive: 0.1)
  server.handle(BotService.new)
  # The standard health service (grpc.health.v1.Health): '' is SERVING from the start,
  # which is what the arena waits for; we say so for arena.v1.BotService too.
  health = Grpc::Health::Checker.new
  serving = Grpc::Health::V1::HealthCheckResponse::ServingStatus::SERVING
  ['', 'arena.v1.BotService'].each { |service| health.add_status(service, serving) }
  server.handle(health)
  creds = credentials
  begin
    port = server.add_http2_port(address, creds)
  rescue RuntimeError => e
    abort "#{NAME}: cannot listen on #{address}: #{e.message}"
  end
  guards = [(creds == :this_port_is_insecure ? nil : 'TLS'),
            (TOKEN.empty? ? nil : 'token required')].compact
  log "listening on #{address}#{address.start_with?('unix:') ? '' : " (port #{port})"}" \
      "#{guards.empty? ? '' : " with #{guards.join(', ')}"}"

  reader, writer = IO.pipe
  %w[TERM INT].each do |signal|
    Signal.trap(signal) { writer.write_nonblock("#{signal}\n", exception: false) }
  end
  Thread.new do
    why = await_stop(reader)
    log "#{why}: shutting down"
    # grpc's RpcServer#stop has been seen, rarely, never to return (the arena then kills
    # the bot after its grace of 1 s): past 0.8 s, end the process here instead
    Thread.new do
      sleep 0.8
      log 'the gRPC server did not stop within 0.8 s: exiting'
      exit!(0)
    end
    server.wait_till_running(5) # (a signal before the server runs: stop it once it does)
    server.stop # calls in progress get the poll period (100 ms) to finish
  end
  server.run
  log 'stopped'
end

main
