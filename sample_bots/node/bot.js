#!/usr/bin/env node
// A sample trick-arena bot in Node.js: a gRPC server implementing arena.v1.BotService.
// It plays Wizard and Trumps with a simple strategy that is always legal, because every
// answer is picked from the legal actions the request lists. Copy it and make it smarter.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const health = require('grpc-health-check');
const { ReflectionService } = require('@grpc/reflection');

// Load the contract at run time from proto/ in this folder, a copy of the repository's
// proto/ (the sandbox shows a bot only its own folder; tests/test_node_bot.py checks the
// copy, `make sample-protos` refreshes it), and the health service's .proto, so that
// reflection describes it too.
// keepCase: fields keep their .proto names (legal_cards, not legalCards);
// enums: String: enum values are their names ('SUIT_HEARTS', 'CARD_KIND_WIZARD'),
// in requests and in our answers; longs: Number; defaults: unset fields are filled in.
const PROTO_DIR = path.join(__dirname, 'proto');
const packageDefinition = protoLoader.loadSync(['arena/v1/bot.proto', health.protoPath], {
  includeDirs: [PROTO_DIR], keepCase: true, enums: String, longs: Number,
  defaults: true, oneofs: true,
});
const arena = grpc.loadPackageDefinition(packageDefinition).arena.v1;

const log = (...args) => console.error('[node-sample]', ...args);

// -- the strategy -----------------------------------------------------------------------

// How strong a card is in the trick in progress: Wizard > trumps > led suit > others >
// Jester. `led` is the led suit, or null when there is none (yet).
function power(card, trump, led) {
  if (card.kind === 'CARD_KIND_WIZARD') return 100;
  if (card.kind === 'CARD_KIND_JESTER') return 0;
  if (card.suit === trump) return 60 + card.rank;
  if (card.suit === led) return 30 + card.rank;
  return card.rank;
}

// The led suit of a trick: that of its first suited card, unless a Wizard came first.
function ledSuit(cards) {
  for (const card of cards) {
    if (card.kind === 'CARD_KIND_WIZARD') return null;
    if (card.kind === 'CARD_KIND_SUITED') return card.suit;
  }
  return null;
}

// Bid: count the cards that should win a trick (Wizards, high trumps, top cards of the
// other suits), scale to the tricks to be played (Trumps draws more cards), and bid the
// legal number nearest to that.
function bid(req) {
  const view = req.view;
  const top = view.game === 'GAME_WIZARD' ? 13 : 14; // the highest rank of the deck
  let winners = 0;
  for (const card of view.hand) {
    if (card.kind === 'CARD_KIND_WIZARD') winners += 1;
    else if (card.kind === 'CARD_KIND_SUITED') {
      const isTrump = card.suit === view.trump;
      if ((isTrump && card.rank >= top - 3) || (!isTrump && card.rank === top)) winners += 1;
    }
  }
  const want = Math.round((winners * view.tricks_in_round) / Math.max(view.hand.length, 1));
  const nearest = (a, b) => (Math.abs(b - want) < Math.abs(a - want) ? b : a);
  return { tricks: req.legal_bids.reduce(nearest) };
}

// Trump: the legal suit we hold most cards of (the first of them on a tie).
function chooseTrump(req) {
  const count = (suit) => req.view.hand.filter((c) => c.suit === suit).length;
  const best = req.legal_suits.reduce((a, b) => (count(b) > count(a) ? b : a));
  return { suit: best };
}

// Play: while we still need tricks (or made no bid: Trumps without announce) the
// strongest legal card, else the weakest.
function play(req) {
  const view = req.view;
  const myBid = view.bids.find((b) => b.seat === view.seat);
  const needTricks = !myBid || view.won[view.seat] < myBid.tricks;
  const led = ledSuit(view.trick ? view.trick.cards : []);
  const score = (card) => power(card, view.trump, led);
  const better = needTricks ? (a, b) => score(b) > score(a) : (a, b) => score(b) < score(a);
  const card = req.legal_cards.reduce((a, b) => (better(a, b) ? b : a));
  return { card }; // a copy of one of the legal cards
}

// -- the service ------------------------------------------------------------------------

// With ARENA_BOT_TOKEN set, every call of the bot service must carry the metadata
// `authorization: Bearer <token>`; others are answered UNAUTHENTICATED. The health
// service stays open. Compared in constant time.
const TOKEN = process.env.ARENA_BOT_TOKEN || '';
function tokenOk(call) {
  if (!TOKEN) return true;
  const given = Buffer.from(String(call.metadata.get('authorization')[0] || ''));
  const expected = Buffer.from(`Bearer ${TOKEN}`);
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

// Wrap a function of the request as a unary gRPC handler; an exception becomes INTERNAL.
function unary(fn) {
  return (call, callback) => {
    if (!tokenOk(call)) {
      callback({ code: grpc.status.UNAUTHENTICATED, details: 'missing or wrong bearer token' });
      return;
    }
    try {
      callback(null, fn(call.request));
    } catch (err) {
      log('error:', err.stack || err);
      callback({ code: grpc.status.INTERNAL, details: String(err.message || err) });
    }
  };
}

const botService = {
  Hello: unary(() => ({
    name: 'node-sample', version: '1.0.0', author: 'trick-arena', protocol_version: 1,
    games: ['GAME_WIZARD', 'GAME_TRUMPS'],
  })),
  Bid: unary(bid),
  ChooseTrump: unary(chooseTrump),
  Play: unary(play),
  RoundEnded: unary(() => ({})),
  GameEnded: unary((req) => {
    log(`game ${req.game_id} over: place ${req.places[req.seat]}, totals ${req.totals}`);
    return {};
  }),
};

// -- start up and shut down -------------------------------------------------------------

function listenAddress(argv) {
  const i = argv.indexOf('--listen');
  if (i >= 0 && argv[i + 1]) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith('--listen='));
  return eq ? eq.slice('--listen='.length) : process.env.ARENA_BOT_LISTEN;
}

function main() {
  const address = listenAddress(process.argv.slice(2));
  if (!address) {
    console.error('node-sample: no address: set ARENA_BOT_LISTEN or pass --listen ADDR');
    process.exit(2);
  }
  const server = new grpc.Server();
  server.addService(arena.BotService.service, botService);
  // The standard health service: the arena waits for '' to be SERVING.
  const status = new health.HealthImplementation({ '': 'NOT_SERVING' });
  status.addToServer(server);
  // Server reflection, so generic tools (grpcurl, grpcui) can list and call the service.
  new ReflectionService(packageDefinition).addToServer(server);

  // TLS when ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY name PEM files (a bot on your own
  // machine, entered as grpcs://HOST:PORT); plaintext otherwise (the arena's unix socket).
  const { ARENA_BOT_TLS_CERT: certFile, ARENA_BOT_TLS_KEY: keyFile } = process.env;
  let credentials = grpc.ServerCredentials.createInsecure();
  if (certFile || keyFile) {
    try {
      credentials = grpc.ServerCredentials.createSsl(null, [{
        cert_chain: fs.readFileSync(certFile), private_key: fs.readFileSync(keyFile),
      }], false);
    } catch (err) {
      console.error(`node-sample: TLS needs ARENA_BOT_TLS_CERT and ARENA_BOT_TLS_KEY: ${err.message}`);
      process.exit(2);
    }
  }
  server.bindAsync(address, credentials, (err, port) => {
    if (err) {
      console.error(`node-sample: cannot listen on ${address}: ${err.message}`);
      process.exit(1);
    }
    status.setStatus('', 'SERVING');
    status.setStatus('arena.v1.BotService', 'SERVING');
    const guards = [certFile && 'TLS', TOKEN && 'token required'].filter(Boolean);
    log(`listening on ${address}${address.startsWith('unix:') ? '' : ` (port ${port})`}`
        + (guards.length ? ` with ${guards.join(', ')}` : ''));
  });

  const stop = (signal) => {
    log(`${signal}: shutting down`);
    server.tryShutdown(() => process.exit(0)); // lets the calls in progress finish
    setTimeout(() => { server.forceShutdown(); process.exit(0); }, 2000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // Exit when the process that started us is gone (even after its kill -9): an orphan
  // is re-parented, so its parent pid changes. Works inside the arena's PID namespace too.
  const parent = process.ppid;
  if (parent > 1) {
    setInterval(() => { if (process.ppid !== parent) stop('parent gone'); }, 250).unref();
  }
}

main();
