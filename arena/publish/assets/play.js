// trick-arena: a seat played in the browser (arena play --web). The server sends the
// seat's state by server-sent events ("events": the seat's view, never another seat's
// cards); a choice is posted to "answer" with the words the terminal takes (H7, 2, H).
// A refused answer comes back with the rules' reason, shown in #message. The table is
// the replay viewer's card table (its markup and the site's stylesheet): the seats with
// their hands (the others' face down), the trump, the trick on the felt with the card
// now winning it, and the scores. Vanilla JS; names are data: set with textContent,
// never as markup.
(function () {
  "use strict";
  var SUITS = "CDHS";
  var SYMBOLS = ["\u2663", "\u2666", "\u2665", "\u2660"];
  var SUIT_NAMES = ["clubs", "diamonds", "hearts", "spades"];
  var FACES = { 11: "J", 12: "Q", 13: "K", 14: "A" };
  var root = document.getElementById("play");
  var mine = Number(root.dataset.seat);
  var players = Number(root.dataset.players);
  var wizard = root.dataset.game === "wizard";
  var hasBids = root.dataset.bids === "true";
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
  function cardEl(card, cls) {
    var e = el("span", symbol(card), (cls || "card") + " " + colour(card));
    e.dataset.card = card;
    e.title = spoken(card);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function nameOf(state, seat) {
    return state.names[seat] !== undefined ? state.names[seat] : "?";
  }
  function who(state, seat) {
    return nameOf(state, seat) + (seat === mine ? " (you)" : "");
  }
  function suitText(letter) {
    if (letter === null || letter === undefined) return "no trump";
    var i = SUITS.indexOf(letter);
    return SYMBOLS[i] + " " + SUIT_NAMES[i];
  }
  function ordinal(k) {
    var tens = k % 100, ones = k % 10;
    var end = tens >= 11 && tens <= 13 ? "th" : ones === 1 ? "st" : ones === 2 ? "nd" :
      ones === 3 ? "rd" : "th";
    return k + end;
  }
  function points(k) { return k + (k === 1 || k === -1 ? " point" : " points"); }
  function signed(x) { return (x > 0 ? "+" : x < 0 ? "\u2212" : "") + Math.abs(x); }
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

  // -- the table: the replay viewer's board, from the seat's view --------------------
  function renderSeats(state, v, playing) {
    for (var s = 0; s < players; s++) {
      var box = root.querySelector('.seat[data-seat="' + s + '"]');
      box.classList.toggle("dealer", s === v.dealer);
      box.classList.toggle("active", s === mine && playing);
      box.classList.toggle("you", s === mine);
      var bits = [];
      if (v.bids[s] !== null) bits.push((wizard ? "bid " : "announced ") + v.bids[s]);
      bits.push("won " + v.won[s]);
      root.querySelector('.seat-info[data-seat="' + s + '"]').textContent =
        bits.join(" \u00b7 ");
      if (s !== mine) {  // the others' cards, face down: how many, never which
        var hand = root.querySelector('.hand[data-seat="' + s + '"]');
        clear(hand);
        var count = v.hand_sizes[s];
        for (var k = 0; k < count; k++) {
          var back = el("span", null, "card back");
          back.setAttribute("aria-hidden", "true");
          hand.appendChild(back);
        }
        hand.setAttribute("role", "img");
        hand.setAttribute("aria-label", count + (count === 1 ? " card" : " cards") +
          ", face down");
      }
      var cells = { bid: v.bids[s] === null ? "" : v.bids[s], won: v.won[s],
        total: String(v.scores[s]).replace("-", "\u2212") };
      for (var cls in cells) {
        var td = root.querySelector("#scores td." + cls + '[data-seat="' + s + '"]');
        if (td) td.textContent = cells[cls];
      }
    }
  }

  function renderTrump(v) {
    var t = byId("trump");
    clear(t);
    t.appendChild(el("strong", "Trump:"));
    if (v.trump_card) t.appendChild(cardEl(v.trump_card, "pip"));
    var what = v.trump === null && v.decision === "trump" ? "a Wizard: you choose" :
      suitText(v.trump);
    t.appendChild(el("span", what, v.trump === "D" || v.trump === "H" ? "red-text" : ""));
    if (!wizard) {
      t.appendChild(el("span", "\u00b7 stock: " + v.stock_size +
        (v.stock_size === 1 ? " card" : " cards"), "muted"));
    }
  }

  function renderTrick(state, v, playing) {
    var trick = byId("trick"), result = byId("trick-result");
    clear(trick);
    clear(result);
    var number = v.tricks.length + 1;
    v.trick.cards.forEach(function (card, i) {
      var seat = (v.trick.leader + i) % players;
      var play = el("div", null, "play");
      play.dataset.seat = seat;
      var c = cardEl(card);
      if (i === v.leading) c.classList.add("leading");
      play.appendChild(c);
      play.appendChild(el("span", who(state, seat), "who"));
      trick.appendChild(play);
    });
    var head = "Trick " + number + " of " + v.tricks_in_round;
    if (v.decision === "bid" || v.decision === "trump") {
      result.textContent = wizard ? "Round " + v.round + ": the bidding" : "The announcements";
    } else if (v.leading !== null && v.leading !== undefined) {
      var seat = (v.trick.leader + v.leading) % players;
      result.appendChild(document.createTextNode(head + " \u00b7 winning now: "));
      result.appendChild(cardEl(v.trick.cards[v.leading], "pip"));
      var w = el("span", who(state, seat));
      w.id = "leading";
      w.dataset.seat = seat;
      result.appendChild(w);
    } else {
      result.textContent = head + (playing && v.decision === "play" ? ": you lead" : "");
    }
  }

  function renderLog(state, v) {
    var log = byId("tricks-log");
    clear(log);
    v.tricks.forEach(function (trick, t) {
      var li = el("li");
      li.dataset.trick = t + 1;
      li.dataset.winner = trick.winner;
      trick.cards.forEach(function (card, i) {
        var seat = (trick.leader + i) % players;
        var c = cardEl(card, "pip");
        c.removeAttribute("data-card");
        c.title = who(state, seat) + ": " + spoken(card);
        if (seat === trick.winner) c.classList.add("winner");
        li.appendChild(c);
      });
      li.appendChild(el("span", "\u2192 " + who(state, trick.winner), "to"));
      log.appendChild(li);
    });
  }

  function renderHand(v, playing) {
    var hand = byId("hand"), bids = byId("bids"), suits = byId("suits");
    clear(hand); clear(bids); clear(suits);
    bids.hidden = true; suits.hidden = true;
    v.hand.forEach(function (card) {
      var legal = playing && v.decision === "play" && v.legal.indexOf(card) >= 0;
      var reason = playing && v.decision === "play" ? v.refused[card] : "not your turn";
      var b = choice(symbol(card), card, legal, reason, "card " + colour(card), spoken(card));
      b.dataset.card = card;
      if (!playing || v.decision !== "play") b.className += " waiting";
      hand.appendChild(b);
    });
    if (playing && v.decision === "bid") {
      bids.hidden = false;
      bids.appendChild(el("span", wizard ? "Your bid:" : "Your announcement:", "ask"));
      for (var n = 0; n <= v.tricks_in_round; n++) {
        var a = String(n);
        bids.appendChild(choice(a, a, v.legal.indexOf(a) >= 0, v.refused[a]));
      }
    }
    if (playing && v.decision === "trump") {
      suits.hidden = false;
      suits.appendChild(el("span", "Trump:", "ask"));
      for (var i = 0; i < 4; i++) {
        suits.appendChild(choice(suitText(SUITS[i]), SUITS[i], true, null,
          "DH".indexOf(SUITS[i]) >= 0 ? "red" : ""));
      }
    }
  }

  // -- the end ------------------------------------------------------------------------
  function renderResult(state) {
    var result = state.result;
    var order = result.places.map(function (p, s) { return s; });
    order.sort(function (a, b) { return result.places[a] - result.places[b] || a - b; });
    var place = result.places[mine];
    var tied = order.filter(function (s) { return s !== mine && result.places[s] === place; });
    var text = "You finished " + ordinal(place) + " of " + players + " with " +
      points(result.totals[mine]) +
      (tied.length ? ", tied with " + tied.map(function (s) {
        return nameOf(state, s);
      }).join(" and ") : "") + ".";
    byId("result-text").textContent = text;
    var places = byId("places");
    clear(places);
    order.forEach(function (s) {
      var li = el("li", ordinal(result.places[s]) + ": " + who(state, s) + ", " +
        points(result.totals[s]));
      li.dataset.seat = s;
      li.dataset.place = result.places[s];
      if (s === mine) li.className = "you";
      places.appendChild(li);
    });
    byId("result").hidden = false;
  }

  function renderRounds(state) {
    var t = byId("rounds");
    var head = t.tHead, body = t.tBodies[0];
    clear(head); clear(body);
    byId("rounds-section").hidden = !state.rounds.length;
    if (!state.rounds.length) return;
    var hr = el("tr");
    hr.appendChild(el("th", wizard ? "Round" : ""));
    hr.lastChild.scope = "col";
    state.names.forEach(function (name, s) {
      hr.appendChild(el("th", who(state, s)));
      hr.lastChild.scope = "col";
    });
    head.appendChild(hr);
    state.rounds.forEach(function (r) {
      var tr = el("tr");
      tr.appendChild(el("th", wizard ? r.round : "The hand", "num"));
      tr.lastChild.scope = "row";
      r.points.forEach(function (p, s) {
        // a bid (Wizard) or an announcement (Trumps with announce); Trumps without
        // announcements has neither, and says neither
        var bid = !hasBids || r.bids[s] === null ? "" :
          (wizard ? "bid " : "announced ") + r.bids[s] + ", ";
        tr.appendChild(el("td", bid + "won " + r.won[s] + ": " + signed(p) +
          (wizard ? " (total " + r.totals[s] + ")" : "")));
      });
      body.appendChild(tr);
    });
  }

  function render(state) {
    current = state;
    root.dataset.status = state.status;
    root.dataset.version = state.version;
    var v = state.view;
    var playing = state.status === "play" && !!v;
    var over = state.status === "over";
    var status = state.message ? state.message.charAt(0).toUpperCase() +
      state.message.slice(1) + "." : "";
    if (playing) {
      status = v.decision === "bid" ? (wizard ? "Your turn: bid." : "Your turn: announce.") :
        v.decision === "trump" ? "Your turn: choose the trump suit." : "Your turn: play a card.";
      if (state.deadline_ms) status += " You have " + state.deadline_ms / 1000 + " s.";
    }
    byId("status").textContent = status;
    if (!playing) showMessage("");
    for (var s = 0; s < players; s++) {
      var name = root.querySelectorAll('.seat-name[data-seat="' + s + '"]');
      for (var i = 0; i < name.length; i++) name[i].textContent = who(state, s);
    }
    byId("table").hidden = over;  // the game is over: no hand, no trick, no turn
    if (v && !over) {
      byId("title").textContent = (wizard ? "Wizard" : "Trumps") +
        (v.rounds > 1 ? ", round " + v.round + " of " + v.rounds : "");
      renderSeats(state, v, playing);
      renderTrump(v);
      renderTrick(state, v, playing);
      renderLog(state, v);
      renderHand(v, playing);
    }
    renderRounds(state);
    if (over && state.result) {
      byId("title").textContent = wizard ? "Wizard" : "Trumps";
      renderResult(state);
    }
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
