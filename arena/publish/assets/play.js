// trick-arena: a seat played in the browser (arena play --web). The server sends the
// seat's state by server-sent events ("events": the seat's view, never another seat's
// cards); a choice is posted to "answer" with the words the terminal takes (H7, 2, H).
// A refused answer comes back with the rules' reason, shown in #message. Vanilla JS;
// names are data: set with textContent, never as markup.
(function () {
  "use strict";
  var SUITS = "CDHS";
  var SYMBOLS = ["\u2663", "\u2666", "\u2665", "\u2660"];
  var SUIT_NAMES = ["clubs", "diamonds", "hearts", "spades"];
  var FACES = { 11: "J", 12: "Q", 13: "K", 14: "A" };
  var root = document.getElementById("play");
  var current = null;
  var busy = false;

  function byId(id) { return document.getElementById(id); }
  function symbol(card) {
    if (card === "W") return "Wizard";
    if (card === "J") return "Jester";
    var rank = Number(card.slice(1));
    return (FACES[rank] || String(rank)) + SYMBOLS[SUITS.indexOf(card.charAt(0))];
  }
  function spoken(card) {  // for screen readers: "7 of diamonds", "queen of hearts"
    if (card === "W") return "Wizard";
    if (card === "J") return "Jester";
    var rank = Number(card.slice(1));
    var names = { 11: "jack", 12: "queen", 13: "king", 14: "ace" };
    return (names[rank] || String(rank)) + " of " + SUIT_NAMES[SUITS.indexOf(card.charAt(0))];
  }
  function colour(card) {
    if (card === "W") return "wizard";
    if (card === "J") return "jester";
    return "DH".indexOf(card.charAt(0)) >= 0 ? "red" : "black";
  }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function who(state, seat) {
    var name = state.names[seat] !== undefined ? state.names[seat] : "?";
    return seat + ": " + name + (state.view && seat === state.view.seat ? " (you)" : "");
  }
  function suitText(letter) {
    if (letter === null || letter === undefined) return "no trump";
    var i = SUITS.indexOf(letter);
    return SYMBOLS[i] + " " + SUIT_NAMES[i];
  }
  function showMessage(text) {
    var m = byId("message");
    m.textContent = text || "";
    m.hidden = !text;
  }

  function send(answer) {
    if (busy) return;
    busy = true;
    fetch("answer", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ answer: answer })
    }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, body: body }; });
    }).then(function (res) {
      busy = false;
      showMessage(res.ok && res.body.ok ? "" : "Refused: " + res.body.error);
    }, function () {
      busy = false;
      showMessage("The arena does not answer: is arena play still running?");
    });
  }

  function choice(label, answer, legal, reason, cls, said) {
    var b = el("button", label, cls);
    b.type = "button";
    b.dataset.answer = answer;
    b.dataset.legal = legal ? "true" : "false";
    if (said) b.setAttribute("aria-label", said);
    if (!legal) {
      b.setAttribute("aria-disabled", "true");
      b.title = reason || "not allowed now";
      b.setAttribute("aria-label", (said || label) + ": not allowed: " + b.title);
    }
    b.addEventListener("click", function () { send(answer); });
    return b;
  }

  function trickList(list, state, trick) {
    clear(list);
    trick.cards.forEach(function (card, i) {
      var seat = (trick.leader + i) % state.view.players;
      var li = el("li", who(state, seat) + " ");
      li.dataset.seat = seat;
      var c = el("span", symbol(card), "card " + colour(card));
      c.dataset.card = card;
      c.title = spoken(card);
      li.appendChild(c);
      if (trick.winner === seat) li.className = "winner";
      list.appendChild(li);
    });
  }

  function render(state) {
    current = state;
    root.dataset.status = state.status;
    root.dataset.version = state.version;
    var v = state.view;
    var status = state.message || "";
    if (state.status === "play" && v) {
      status = v.decision === "bid" ? "Your turn: bid." :
        v.decision === "trump" ? "Your turn: choose the trump suit." : "Your turn: play a card.";
      if (state.deadline_ms) status += " You have " + state.deadline_ms / 1000 + " s.";
    }
    byId("status").textContent = status;
    if (state.status !== "play") showMessage("");
    var seats = byId("seats").tBodies[0];
    clear(seats);
    if (v) {
      var title = (v.game === "wizard" ? "Wizard" : "Trumps") +
        (v.rounds > 1 ? ", round " + v.round + " of " + v.rounds : "");
      byId("title").textContent = title;
      byId("bid-col").textContent = v.game === "wizard" ? "Bid" : "Announced";
      var trump = "Trump: " + suitText(v.trump) +
        (v.trump_card ? " (turned: " + symbol(v.trump_card) + ")" : "") +
        (v.game === "trumps" ? " · stock: " + v.stock_size + " cards" : "") +
        " · dealer: " + who(state, v.dealer);
      byId("trump").textContent = trump;
      for (var s = 0; s < v.players; s++) {
        var tr = el("tr");
        tr.dataset.seat = s;
        if (s === v.seat) tr.className = "you";
        tr.appendChild(el("td", s));
        tr.appendChild(el("th", state.names[s] !== undefined ? state.names[s] : "?"));
        tr.lastChild.scope = "row";
        tr.appendChild(el("td", v.bids[s] === null ? "–" : v.bids[s], "num bid"));
        tr.appendChild(el("td", v.won[s], "num won"));
        tr.appendChild(el("td", v.scores[s], "num score"));
        seats.appendChild(tr);
      }
      trickList(byId("trick"), state, v.trick);
      var last = v.tricks.length ? v.tricks[v.tricks.length - 1] : null;
      if (last) trickList(byId("last-trick"), state, last); else clear(byId("last-trick"));
    }
    var hand = byId("hand"), bids = byId("bids"), suits = byId("suits");
    clear(hand); clear(bids); clear(suits);
    bids.hidden = true; suits.hidden = true;
    var playing = state.status === "play" && v;
    if (v) {
      v.hand.forEach(function (card) {
        var legal = playing && v.decision === "play" && v.legal.indexOf(card) >= 0;
        var reason = playing && v.decision === "play" ? v.refused[card] : "not your turn";
        var b = choice(symbol(card), card, legal, reason, colour(card), spoken(card));
        b.dataset.card = card;
        if (!playing || v.decision !== "play") b.className += " waiting";
        hand.appendChild(b);
      });
    }
    if (playing && v.decision === "bid") {
      bids.hidden = false;
      bids.setAttribute("aria-label", v.game === "wizard" ? "Your bid" : "Your announcement");
      for (var n = 0; n <= v.tricks_in_round; n++) {
        var a = String(n);
        bids.appendChild(choice(a, a, v.legal.indexOf(a) >= 0, v.refused[a]));
      }
    }
    if (playing && v.decision === "trump") {
      suits.hidden = false;
      for (var i = 0; i < 4; i++) {
        suits.appendChild(choice(suitText(SUITS[i]), SUITS[i], true, null));
      }
    }
    renderRounds(state);
    if (state.status === "over" && state.result) {
      var places = byId("places");
      clear(places);
      var order = state.result.places.map(function (p, s) { return s; });
      order.sort(function (a, b) { return state.result.places[a] - state.result.places[b] || a - b; });
      order.forEach(function (s) {
        var li = el("li", "place " + state.result.places[s] + ": " + who(state, s) +
          ", " + state.result.totals[s] + " points");
        li.dataset.seat = s;
        places.appendChild(li);
      });
      byId("result").hidden = false;
    }
  }

  function renderRounds(state) {
    var t = byId("rounds");
    var head = t.tHead, body = t.tBodies[0];
    clear(head); clear(body);
    if (!state.rounds.length) return;
    var hr = el("tr");
    hr.appendChild(el("th", "Round"));
    state.names.forEach(function (name, s) { hr.appendChild(el("th", who(state, s))); });
    head.appendChild(hr);
    state.rounds.forEach(function (r) {
      var tr = el("tr");
      tr.appendChild(el("td", r.round, "num"));
      r.points.forEach(function (p, s) {
        var bid = r.bids[s] === null ? "" : "bid " + r.bids[s] + ", ";
        tr.appendChild(el("td", bid + "won " + r.won[s] + ": " + (p > 0 ? "+" : "") + p +
          " (total " + r.totals[s] + ")"));
      });
      body.appendChild(tr);
    });
  }

  var events = new EventSource("events");
  events.onmessage = function (e) {
    var state = JSON.parse(e.data);
    render(state);  // after the "over" state the server ends the stream
  };
  events.onerror = function () {
    if (current && current.status === "over") return;
    byId("status").textContent = "Connection lost; retrying…";
  };
})();
