// trick-arena replay viewer: steps through the game record embedded in the page
// (<script type="application/json" id="record">). Vanilla JS, no libraries.
//
// Steps, round by round: the deal; the trump; each bid (Wizard; Trumps with announce),
// from the dealer's left; each card played; each trick's completion (winner marked,
// Trumps draws taken); the round's end with its points. #replay carries data-round
// (1-based), data-trick (tricks completed in the round) and data-step (0-based).
(function () {
  "use strict";
  var root = document.getElementById("replay");
  var source = document.getElementById("record");
  if (!root || !source) return;
  var rec = JSON.parse(source.textContent);
  var seats = rec.seats;
  var n = seats.length;
  var wizard = rec.game === "wizard";
  var SUITS = "CDHS";
  var SYMBOLS = ["\u2663", "\u2666", "\u2665", "\u2660"];
  var SUIT_NAMES = ["clubs", "diamonds", "hearts", "spades"];
  var FACES = { 11: "J", 12: "Q", 13: "K", 14: "A" };

  // -- cards ------------------------------------------------------------------------
  function symbol(card) {
    if (card === "W") return "Wizard";
    if (card === "J") return "Jester";
    var rank = Number(card.slice(1));
    return (FACES[rank] || String(rank)) + SYMBOLS[SUITS.indexOf(card.charAt(0))];
  }
  function colour(card) {
    if (card === "W") return "wizard";
    if (card === "J") return "jester";
    return "DH".indexOf(card.charAt(0)) >= 0 ? "red" : "black";
  }
  function sortKey(card) {  // as the record sorts hands: C, D, H, S by rank; W, then J
    if (card === "W") return 1000;
    if (card === "J") return 1001;
    return SUITS.indexOf(card.charAt(0)) * 100 + Number(card.slice(1));
  }
  function suitText(letter) {
    var i = SUITS.indexOf(letter);
    return SYMBOLS[i] + " " + SUIT_NAMES[i];
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function cardEl(card, cls) {
    var e = el("span", (cls || "card") + " " + colour(card), symbol(card));
    e.setAttribute("data-card", card);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function zeros() { var a = []; for (var i = 0; i < n; i++) a.push(0); return a; }
  function signed(x) { return (x > 0 ? "+" : x < 0 ? "\u2212" : "") + Math.abs(x); }

  // -- the steps ----------------------------------------------------------------------
  var steps = [];
  var roundStart = {};
  var totals = zeros();
  rec.rounds.forEach(function (rnd) {
    var hands = rnd.hands.map(function (h) { return h.slice(); });
    var bids = rnd.hands.map(function () { return null; });
    var won = zeros();
    var done = 0;
    var stock = rnd.stock.length;
    var trumpShown = false;
    var roundName = wizard ? "Round " + rnd.number + " of " + rec.rounds.length : "The hand";
    function snap(kind, text, extra) {
      var s = {
        kind: kind, text: text, round: rnd.number, rnd: rnd, tricks: done,
        hands: hands.map(function (h) { return h.slice(); }), bids: bids.slice(),
        won: won.slice(), totals: totals.slice(), points: null, trick: null,
        trumpShown: trumpShown, stock: stock, actor: null, drawn: null
      };
      for (var k in extra) s[k] = extra[k];
      steps.push(s);
    }
    roundStart[rnd.number] = steps.length;
    var size = rnd.hands[0] ? rnd.hands[0].length : 0;
    snap("deal", roundName + ": " + seats[rnd.dealer] + " deals " + size +
      (size === 1 ? " card" : " cards") + " to each player.");
    trumpShown = true;
    snap("trump", trumpText(rnd));
    if (rnd.bids) {
      for (var k = 1; k <= n; k++) {
        var seat = (rnd.dealer + k) % n;
        bids[seat] = rnd.bids[seat];
        snap("bid", seats[seat] + (wizard ? " bids " : " announces ") + rnd.bids[seat] + ".",
          { actor: seat });
      }
    }
    rnd.tricks.forEach(function (trick, t) {
      var played = [];
      trick.cards.forEach(function (card, i) {
        var seat = (trick.leader + i) % n;
        var at = hands[seat].indexOf(card);
        if (at >= 0) hands[seat].splice(at, 1);
        played.push({ seat: seat, card: card });
        snap("play", seats[seat] + (i === 0 ? " leads " : " plays ") + symbol(card) + ".", {
          actor: seat, trick: { number: t + 1, leader: trick.leader, cards: played.slice(),
            winner: null }
        });
      });
      won[trick.winner] += 1;
      done = t + 1;
      var drawn = (rnd.draws && rnd.draws[t]) || [];
      var text = seats[trick.winner] + " wins trick " + (t + 1) + ".";
      drawn.forEach(function (card, i) {
        var seat = (trick.winner + i) % n;
        hands[seat].push(card);
        hands[seat].sort(function (a, b) { return sortKey(a) - sortKey(b); });
      });
      if (drawn.length) {
        stock -= drawn.length;
        text += " Each player draws a card from the stock, the winner first.";
      }
      snap("trick", text, {
        actor: trick.winner, drawn: drawn,
        trick: { number: t + 1, leader: trick.leader, cards: played, winner: trick.winner }
      });
    });
    totals = totals.map(function (x, s) { return x + rnd.points[s]; });
    var last = rnd.tricks.length ? rnd.tricks[rnd.tricks.length - 1] : null;
    var summary = seats.map(function (name, s) { return name + " " + signed(rnd.points[s]); });
    snap("end", (wizard ? "End of round " + rnd.number : "End of the game") + ": " +
      summary.join(", ") + ".", {
      points: rnd.points.slice(), totals: totals.slice(),
      trick: last ? {
        number: rnd.tricks.length, leader: last.leader, winner: last.winner,
        cards: last.cards.map(function (c, i) { return { seat: (last.leader + i) % n, card: c }; })
      } : null
    });
  });

  function trumpText(rnd) {
    var dealer = seats[rnd.dealer];
    var tc = rnd.trump_card;
    if (wizard) {
      if (tc === null) return "No card is left to turn up: no trump this round.";
      if (tc === "J") return dealer + " turns up a Jester: no trump this round.";
      if (tc === "W") {
        return dealer + " turns up a Wizard and, as the dealer, chooses " +
          suitText(rnd.trump) + " as trump.";
      }
      return dealer + " turns up " + symbol(tc) + ": " + suitText(rnd.trump) + " are trump.";
    }
    if (tc === null) return "Trump is " + suitText(rnd.trump) + ", fixed by the options.";
    return "The turned card is " + symbol(tc) + ": " + suitText(rnd.trump) +
      " are trump. It lies face up at the bottom of the stock.";
  }

  // -- the page ---------------------------------------------------------------------
  function byId(id) { return document.getElementById(id); }
  var seatEls = root.querySelectorAll(".seat[data-seat]");
  var handEls = [], infoEls = [], seatBox = [];
  for (var s = 0; s < n; s++) {
    handEls.push(root.querySelector('.hand[data-seat="' + s + '"]'));
    infoEls.push(root.querySelector('.seat-info[data-seat="' + s + '"]'));
    seatBox.push(seatEls[s]);
  }
  var cells = {};
  ["bid", "won", "points", "total"].forEach(function (cls) {
    cells[cls] = [];
    for (var s = 0; s < n; s++) {
      cells[cls].push(root.querySelector("#scores td." + cls + '[data-seat="' + s + '"]'));
    }
  });
  var trumpEl = byId("trump"), trickEl = byId("trick"), resultEl = byId("trick-result");
  var logEl = byId("tricks-log"), textEl = byId("step-text"), countEl = byId("step-count");
  var prev = byId("prev"), next = byId("next"), first = byId("first"), lastBtn = byId("last");
  var jump = byId("round-jump");
  var cur = 0;

  function renderTrick(s) {
    clear(trickEl);
    clear(resultEl);
    if (!s.trick) return;
    var t = s.trick;
    t.cards.forEach(function (p) {
      var play = el("div", "play");
      play.setAttribute("data-seat", p.seat);
      var c = cardEl(p.card);
      if (t.winner !== null && p.seat === t.winner) c.classList.add("winner");
      play.appendChild(c);
      play.appendChild(el("span", "who", seats[p.seat]));
      trickEl.appendChild(play);
    });
    if (t.winner !== null) {
      resultEl.appendChild(document.createTextNode("Trick " + t.number + " won by "));
      var w = el("span", "", seats[t.winner]);
      w.id = "trick-winner";
      w.setAttribute("data-seat", t.winner);
      resultEl.appendChild(w);
      if (s.drawn && s.drawn.length) {
        resultEl.appendChild(document.createTextNode(" \u00b7 drawn: "));
        s.drawn.forEach(function (card) { resultEl.appendChild(cardEl(card, "pip")); });
      }
    } else {
      resultEl.textContent = "Trick " + t.number;
    }
  }

  function renderTrump(s) {
    clear(trumpEl);
    var rnd = s.rnd;
    if (!s.trumpShown) {
      trumpEl.appendChild(el("span", "muted", "Trump: not turned yet"));
    } else {
      trumpEl.appendChild(el("strong", "", "Trump:"));
      if (rnd.trump_card !== null) trumpEl.appendChild(cardEl(rnd.trump_card, "pip"));
      var what = rnd.trump === null ? "no trump" : suitText(rnd.trump);
      var t = el("span", rnd.trump === "D" || rnd.trump === "H" ? "red-text" : "", what);
      trumpEl.appendChild(t);
    }
    if (!wizard && rnd.draws) {
      trumpEl.appendChild(el("span", "muted", "\u00b7 stock: " + s.stock +
        (s.stock === 1 ? " card" : " cards")));
    }
  }

  function renderLog(s) {
    clear(logEl);
    for (var t = 0; t < s.tricks; t++) {
      var trick = s.rnd.tricks[t];
      var li = el("li");
      li.setAttribute("data-trick", t + 1);
      li.setAttribute("data-winner", trick.winner);
      trick.cards.forEach(function (card, i) {
        var c = cardEl(card, "pip");
        c.removeAttribute("data-card");
        c.title = seats[(trick.leader + i) % n];
        if ((trick.leader + i) % n === trick.winner) c.classList.add("winner");
        li.appendChild(c);
      });
      li.appendChild(el("span", "to", "\u2192 " + seats[trick.winner]));
      logEl.appendChild(li);
    }
  }

  function render() {
    var s = steps[cur];
    root.setAttribute("data-round", s.round);
    root.setAttribute("data-trick", s.tricks);
    root.setAttribute("data-step", cur);
    for (var seat = 0; seat < n; seat++) {
      var box = seatBox[seat];
      if (box) {
        box.classList.toggle("dealer", seat === s.rnd.dealer);
        box.classList.toggle("active", s.actor === seat && (s.kind === "bid" ||
          s.kind === "play"));
        box.classList.toggle("won-trick", s.actor === seat && s.kind === "trick");
      }
      if (handEls[seat]) {
        clear(handEls[seat]);
        s.hands[seat].forEach(function (card) { handEls[seat].appendChild(cardEl(card)); });
      }
      if (infoEls[seat]) {
        var bits = [];
        if (s.bids[seat] !== null) bits.push((wizard ? "bid " : "announced ") + s.bids[seat]);
        if (s.kind !== "deal" && s.kind !== "trump") bits.push("won " + s.won[seat]);
        infoEls[seat].textContent = bits.join(" \u00b7 ");
      }
      if (cells.bid[seat]) cells.bid[seat].textContent = s.bids[seat] === null ? "" : s.bids[seat];
      if (cells.won[seat]) cells.won[seat].textContent = s.won[seat];
      var pts = cells.points[seat];
      if (pts) {
        pts.textContent = s.points ? signed(s.points[seat]) : "";
        pts.classList.toggle("plus", !!s.points && s.points[seat] > 0);
        pts.classList.toggle("minus", !!s.points && s.points[seat] < 0);
      }
      if (cells.total[seat]) cells.total[seat].textContent = String(s.totals[seat]).replace("-", "\u2212");
    }
    renderTrump(s);
    renderTrick(s);
    renderLog(s);
    textEl.textContent = s.text;
    if (countEl) countEl.textContent = "Step " + (cur + 1) + " of " + steps.length;
    prev.disabled = first.disabled = cur === 0;
    next.disabled = lastBtn.disabled = cur === steps.length - 1;
    if (jump) jump.value = String(s.round);
  }

  function go(to) {
    to = Math.max(0, Math.min(steps.length - 1, to));
    if (to === cur) return;
    cur = to;
    render();
    try {  // keep the position in the address (#step=N), so it can be shared or reloaded
      history.replaceState(null, "", cur ? "#step=" + cur : window.location.pathname +
        window.location.search);
    } catch (err) { /* some browsers refuse on file:// pages: the address just stays */ }
  }

  prev.addEventListener("click", function () { go(cur - 1); });
  next.addEventListener("click", function () { go(cur + 1); });
  if (first) first.addEventListener("click", function () { go(0); });
  if (lastBtn) lastBtn.addEventListener("click", function () { go(steps.length - 1); });
  if (jump) {
    jump.addEventListener("change", function () {
      go(roundStart[Number(jump.value)]);
      jump.blur();
    });
  }
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    var tag = e.target && e.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
    if (e.key === "ArrowRight") go(cur + 1);
    else if (e.key === "ArrowLeft") go(cur - 1);
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(steps.length - 1);
    else return;
    e.preventDefault();
  });
  var wanted = /^#step=(\d+)$/.exec(window.location.hash);
  if (wanted) cur = Math.min(steps.length - 1, Number(wanted[1]));
  if (steps.length) render();
})();
