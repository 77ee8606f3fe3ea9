// trick-arena site: sortable tables and the games-list filters. Vanilla JS, no libraries.
(function () {
  "use strict";

  // -- sortable tables: <th data-sort="KEY" data-dir="asc|desc"> sorts the body rows by
  // the cells <td data-col="KEY" data-value="..."> (numbers as numbers, empty last).
  function cellValue(row, key) {
    var cell = row.querySelector('[data-col="' + key + '"]');
    if (!cell) return null;
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value")
      : cell.textContent.trim();
    if (raw === "" || raw === null) return null;
    var n = Number(raw);
    return isNaN(n) ? raw.toLowerCase() : n;
  }

  function compare(a, b) {
    if (a === b) return 0;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a) < String(b) ? -1 : 1;
  }

  function sortTable(table, th) {
    var key = th.getAttribute("data-sort");
    var current = th.getAttribute("aria-sort");
    var dir;
    if (current === "ascending") dir = "desc";
    else if (current === "descending") dir = "asc";
    else dir = th.getAttribute("data-dir") === "desc" ? "desc" : "asc";
    var sign = dir === "asc" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      return { row: row, value: cellValue(row, key), index: i };
    });
    rows.sort(function (x, y) {
      if (x.value === null && y.value === null) return x.index - y.index;
      if (x.value === null) return 1;  // missing values last, whichever the direction
      if (y.value === null) return -1;
      return sign * compare(x.value, y.value) || x.index - y.index;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
  }

  Array.prototype.forEach.call(document.querySelectorAll("table"), function (table) {
    Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (th) {
      th.addEventListener("click", function () { sortTable(table, th); });
    });
  });

  // -- the games list: three selects hide the rows that do not match.
  var games = document.getElementById("games");
  var byBot = document.getElementById("filter-bot");
  var byTable = document.getElementById("filter-table");
  var byDeal = document.getElementById("filter-deal");
  var count = document.getElementById("games-count");
  if (games && byBot && byTable && byDeal) {
    var apply = function () {
      var bot = byBot.value, tableNo = byTable.value, deal = byDeal.value;
      var shown = 0, rows = games.tBodies[0].rows;
      for (var i = 0; i < rows.length; i++) {
        var row = rows[i];
        var ok = (!tableNo || row.getAttribute("data-table") === tableNo) &&
          (!deal || row.getAttribute("data-deal") === deal) &&
          (!bot || row.getAttribute("data-bots").split(",").indexOf(bot) >= 0);
        row.hidden = !ok;
        if (ok) shown++;
      }
      if (count) {
        count.textContent = (shown === rows.length ? "" : shown + " of ") + rows.length +
          (rows.length === 1 ? " game" : " games");
      }
    };
    // games.html?bot=NAME&table=tN&deal=N preselects (the bot pages link here that way)
    var params = new URLSearchParams(window.location.search);
    [["bot", byBot], ["table", byTable], ["deal", byDeal]].forEach(function (pair) {
      var wanted = params.get(pair[0]);
      if (wanted !== null) {
        for (var i = 0; i < pair[1].options.length; i++) {
          if (pair[1].options[i].value === wanted) { pair[1].value = wanted; break; }
        }
      }
    });
    [byBot, byTable, byDeal].forEach(function (select) {
      select.addEventListener("change", apply);
    });
    var form = document.getElementById("filters");
    if (form) form.addEventListener("submit", function (e) { e.preventDefault(); });
    // a list of many pages: the pager's links keep the filters chosen
    var keep = function () {
      var query = new URLSearchParams();
      if (byBot.value) query.set("bot", byBot.value);
      if (byTable.value) query.set("table", byTable.value);
      if (byDeal.value) query.set("deal", byDeal.value);
      var text = query.toString();
      document.querySelectorAll("a[data-keep-query]").forEach(function (a) {
        a.search = text ? "?" + text : "";
      });
    };
    [byBot, byTable, byDeal].forEach(function (select) {
      select.addEventListener("change", keep);
    });
    apply();
    keep();
  }

  // -- tables wider than their box: the box scrolls sideways. Say so where it does: the
  // box is marked "overflows" (its right edge fades while there is more to the right,
  // "at-end" once scrolled there) and a following .scroll-hint is shown.
  var boxes = document.querySelectorAll(".scroll");
  function mark(box) {
    var overflows = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("overflows", overflows);
    box.classList.toggle("at-end", box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
    var hint = box.nextElementSibling;
    if (hint && hint.classList.contains("scroll-hint")) hint.hidden = !overflows;
  }
  Array.prototype.forEach.call(boxes, function (box) {
    box.addEventListener("scroll", function () { mark(box); }, { passive: true });
    mark(box);
  });
  window.addEventListener("resize", function () {
    Array.prototype.forEach.call(boxes, mark);
  });
})();
