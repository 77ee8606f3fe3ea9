// The live page of a league (arena/league_service/web.py): drawn from the public state that
// /events sends (server-sent events) on every change. Every name and every other
// submitted text is set with textContent, never as markup.
'use strict';
(function () {
  const main = document.querySelector('main[data-page]');
  if (!main) return;
  const page = main.dataset.page;
  const SUITS = { C: '\u2663', D: '\u2666', H: '\u2665', S: '\u2660' };
  const RANKS = { 11: 'J', 12: 'Q', 13: 'K', 14: 'A' };

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function link(href, text) {
    const a = el('a', text);
    a.href = href;
    return a;
  }
  function botHref(name) { return '/bots/' + encodeURIComponent(name); }
  function cardEl(card) {
    if (card === null || card === undefined) {
      // a card played while another rotation of the deal is to come: face down
      const back = el('span', '?', 'card back');
      back.title = 'hidden until the set is complete';
      back.setAttribute('role', 'img');
      back.setAttribute('aria-label', 'a hidden card');
      back.dataset.card = '';
      return back;
    }
    let cls = 'card black';
    let text = card;
    if (card === 'W') { cls = 'card wizard'; text = 'W'; }
    else if (card === 'J') { cls = 'card jester'; text = 'J'; }
    else {
      const suit = card[0];
      const rank = +card.slice(1);
      cls = 'card ' + ('DH'.includes(suit) ? 'red' : 'black');
      text = (RANKS[rank] || String(rank)) + (SUITS[suit] || suit);
    }
    const span = el('span', text, cls);
    span.dataset.card = card;
    return span;
  }
  function fill(target, children) {
    target.replaceChildren(...children);
  }
  function when(ms) {
    return new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
  }

  // -- the index ------------------------------------------------------------------------
  const seenFinished = new Set();
  let firstState = true;
  const latencies = [];
  window.arenaLatencies = latencies;

  function drawIndex(s) {
    const body = document.querySelector('#standings tbody');
    fill(body, s.standings.map(r => {
      const tr = el('tr');
      tr.dataset.bot = r.name;
      tr.append(el('td', r.rank || '–', 'num'));
      const th = el('th');
      th.scope = 'row';
      th.append(link(botHref(r.name), r.name));
      if (r.status === 'retired') {
        tr.classList.add('is-retired');
        th.append(' ', el('span', 'retired', 'mark retired'));
      }
      tr.append(th, el('td', r.author), el('td', r.version), el('td', r.elo.toFixed(0), 'num'),
                el('td', r.low.toFixed(0) + ' – ' + r.high.toFixed(0), 'num'),
                el('td', r.games, 'num'));
      return tr;
    }));
    document.getElementById('standings-empty').hidden = s.standings.length > 0;
    const live = Object.values(s.live);
    fill(document.getElementById('live-games'), live.map(g => {
      const li = el('li');
      li.dataset.game = g.game_id;
      li.append(link('/watch/' + encodeURIComponent(g.game_id), g.game_id), ' ',
                el('span', g.game + ': ' + g.seats.join(', ') +
                   (g.state && g.state.round ? ' (round ' + g.state.round + ')' : '') +
                   (g.state && g.state.cards_shown === false ? ', cards hidden' : ''),
                   'muted'));
      return li;
    }));
    document.getElementById('live-empty').hidden = live.length > 0;
    fill(document.querySelector('#recent tbody'), s.recent.map(g => {
      const tr = el('tr');
      tr.dataset.game = g.game_id;
      const td = el('td');
      td.append(link('/games/' + encodeURIComponent(g.game_id), g.game_id));
      const seats = el('td');
      g.seats.forEach((name, i) => {
        if (i) seats.append(', ');
        seats.append(link(botHref(name), name), ' ' + g.totals[i]);
      });
      tr.append(td, seats, el('td', g.faults.reduce((a, b) => a + b, 0), 'num'),
                el('td', when(g.finished_ms)));
      return tr;
    }));
    // how long a finished game took to reach this page (the browser test reads it)
    const now = Date.now();
    for (const g of s.recent) {
      if (seenFinished.has(g.game_id)) continue;
      seenFinished.add(g.game_id);
      if (!firstState) {
        latencies.push({ game: g.game_id, ms: now - g.finished_ms });
        main.dataset.lastLatencyMs = String(now - g.finished_ms);
      }
    }
    firstState = false;
    main.dataset.version = String(s.version);
  }

  // -- a game in progress ---------------------------------------------------------------
  function drawWatch(s) {
    const id = main.dataset.game;
    const status = document.getElementById('watch-status');
    const g = s.live[id];
    if (!g) {
      const done = s.recent.find(r => r.game_id === id);
      status.textContent = done ? 'The game is over.' : 'This game is not being played.';
      document.getElementById('replay-link').hidden = !done;
      main.dataset.state = done ? 'over' : 'unknown';
      return;
    }
    const st = g.state;
    main.dataset.state = 'live';
    // no card is sent while another rotation of the deal is to come (cards_shown false)
    const hidden = st.cards_shown === false;
    main.dataset.cards = hidden ? 'hidden' : 'shown';
    document.getElementById('cards-hidden').hidden = !hidden;
    const toCome = st.rotations_to_come || 0;
    document.getElementById('to-come').textContent =
      toCome + ' more rotation' + (toCome === 1 ? '' : 's');
    status.textContent = g.game + ', round ' + st.round + ' of ' + st.rounds +
      (st.to_move === null || st.to_move === undefined ? '' : '; to move: ' + g.seats[st.to_move]);
    fill(document.getElementById('watch-seats'), g.seats.map((name, i) => {
      const div = el('div', null, 'seat' + (st.to_move === i ? ' to-move' : ''));
      div.dataset.seat = String(i);
      const head = el('div', null, 'seat-head');
      head.append(el('span', i, 'seat-no'), link(botHref(name), name));
      if (st.dealer === i) head.append(el('span', 'dealer', 'badge'));
      const bid = st.bids && st.bids[i] !== null && st.bids[i] !== undefined ? st.bids[i] : '–';
      head.append(el('span', 'bid ' + bid, 'seat-bid'),
                  el('span', 'won ' + st.won[i] + ', score ' + st.scores[i], 'seat-info'),
                  el('span', st.cards_left[i] + ' cards in hand', 'cards-left'));
      div.append(head);
      return div;
    }));
    const trump = document.getElementById('trump');
    const turnedHidden = hidden && st.trump_turned;  // a card was turned: face down
    fill(trump, [el('span', 'Trump: ' + (turnedHidden ? 'hidden' : st.trump || 'none') + ' '),
                 ...(st.trump_card || turnedHidden ? [cardEl(st.trump_card)] : [])]);
    const n = g.seats.length;
    fill(document.getElementById('trick'), st.trick.cards.map((c, k) => {
      const span = el('span', null, 'played');
      span.append(cardEl(c), el('span', g.seats[(st.trick.leader + k) % n], 'who'));
      return span;
    }));
    fill(document.getElementById('tricks-log'), st.tricks.map(t => {
      const li = el('li');
      t.cards.forEach(c => li.append(cardEl(c), ' '));
      li.append(el('span', 'won by ' + g.seats[t.winner], 'muted'));
      return li;
    }));
    main.dataset.version = String(s.version);
  }

  // -- an author's logs -------------------------------------------------------------------
  let token = '';
  async function mine() {
    const status = document.getElementById('mine-status');
    const list = document.getElementById('my-games');
    const reply = await fetch('/api/my-games', { headers: { Authorization: 'Bearer ' + token } });
    const data = await reply.json();
    if (!reply.ok) {
      status.textContent = data.error || 'refused';
      list.replaceChildren();
      return;
    }
    status.textContent = data.author + ': ' + data.games.length + ' games';
    fill(list, data.games.map(g => {
      const li = el('li');
      li.dataset.game = g.game_id;
      const button = el('button', 'log', 'show-log');
      button.type = 'button';
      button.addEventListener('click', () => showLog(g.game_id));
      li.append(link('/games/' + encodeURIComponent(g.game_id), g.game_id), ' ',
                el('span', g.seats.join(', '), 'muted'), ' ', button);
      return li;
    }));
  }
  async function showLog(id) {
    const pre = document.getElementById('log');
    const reply = await fetch('/api/log/' + encodeURIComponent(id),
                              { headers: { Authorization: 'Bearer ' + token } });
    pre.hidden = false;
    pre.dataset.game = id;
    if (!reply.ok) {
      const data = await reply.json();
      pre.textContent = data.error || 'refused';
      pre.dataset.ok = 'false';
      return;
    }
    pre.textContent = await reply.text();
    pre.dataset.ok = 'true';
  }
  const form = document.getElementById('token-form');
  if (form) {
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      token = document.getElementById('token').value.trim();
      mine();
    });
  }

  // -- the events ------------------------------------------------------------------------
  const draw = page === 'index' ? drawIndex : page === 'watch' ? drawWatch : null;
  if (!draw) return;
  const connection = document.getElementById('connection');
  const source = new EventSource('/events');
  source.onopen = () => { connection.textContent = 'connected'; };
  source.onerror = () => { connection.textContent = 'reconnecting…'; };
  source.onmessage = m => draw(JSON.parse(m.data));
})();
