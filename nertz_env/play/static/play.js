// nertz-play page: draws what the server sends (the table as SVG from nertz_env.render.draw), turns clicks and drags on
// the drawing into action indices from the server's list of legal moves, and shows every answer (a queued
// move, a lost race, a refused click) in the flash bar and the log. Nothing is silent.
"use strict";

const S = {
  ws: null, role: null, seat: 0, names: [], mode: "realtime", view: null, legal: [],
  selected: null, down: null, dragging: false, pending: null, paused: false, done: false, closed: false,
};
const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ messages to the page
let flashTimer = null;
function flash(text, kind = "info", keep = true) {
  const el = $("flash");
  el.textContent = text;
  el.className = "flash " + kind;
  clearTimeout(flashTimer);
  if (kind === "info") flashTimer = setTimeout(() => { el.textContent = ""; el.className = "flash"; }, 5000);
  if (keep) log(text, kind);
}
function log(text, kind = "info") {
  const li = document.createElement("li");
  const tick = S.view ? `[${S.view.tick}] ` : "";
  li.textContent = tick + text;
  li.className = kind;
  const ol = $("log");
  ol.insertBefore(li, ol.firstChild);
  while (ol.children.length > 200) ol.removeChild(ol.lastChild);
}

// ------------------------------------------------------------------ the connection
// a table served beyond loopback needs its token: the page's address has it, and the page's answer set it as a
// cookie, which the websocket and a reload carry; so it leaves the address bar and the history at once
const TOKEN = new URLSearchParams(location.search).get("token");
if (TOKEN) history.replaceState(null, "", location.pathname + location.hash);

function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${proto}//${location.host}/ws` + (TOKEN ? "?token=" + encodeURIComponent(TOKEN) : ""));
  S.ws = ws;
  ws.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch (e) { flash("the server sent something unreadable", "error"); return; }
    handle(msg);
  };
  ws.onclose = (ev) => {
    S.closed = true;
    S.role = null;
    showButtons();
    $("role").textContent = "disconnected";
    $("role").className = "badge offline";
    const why = ev && ev.reason ? ` (${ev.reason})` : ev && ev.code === 1009 ? " (a message over the server's limit)" : "";
    flash(`the connection to the table is closed${why || " (the server stopped?)"}. The replay on disk keeps every tick played; reload to reconnect.`, "error");
  };
}
function send(obj) {
  if (!S.ws || S.ws.readyState !== WebSocket.OPEN) { flash("not connected to the table: reload the page", "error"); return false; }
  S.ws.send(JSON.stringify(obj));
  return true;
}

function handle(msg) {
  if (msg.role) setRole(msg.role);
  switch (msg.type) {
    case "welcome":
      S.seat = msg.seat; S.names = msg.names; S.mode = msg.mode;
      $("mode-help").textContent = msg.mode === "step"
        ? "Step mode: every move or wait of yours plays one tick; the bots move in the same tick."
        : `Real time: the table ticks every ${msg.tick_ms} ms and the bots move every tick. Your move is played on the next tick; a later click replaces it. P pauses.`;
      $("btn-pause").hidden = msg.mode === "step";
      if (msg.replay) $("replay").textContent = "replay: " + msg.replay;
      flash(msg.message, msg.role === "spectator" ? "warn" : "info");
      break;
    case "state": onState(msg); break;
    case "queued":
      S.pending = msg.pending;
      showPending();
      flash(msg.message, "info", false);
      break;
    case "info":
      if (typeof msg.paused === "boolean") { S.paused = msg.paused; showStatus(); }
      flash(msg.message, "info");
      break;
    case "error":
      flash(msg.message, "error");
      break;
    default:
      flash("unknown message from the server: " + msg.type, "error");
  }
}

function setRole(role) {
  S.role = role;
  $("role").textContent = role === "player" ? `you play seat ${S.seat}` : "spectator";
  $("role").className = "badge " + role;
}

function onState(msg) {
  S.view = msg.view; S.legal = msg.view.legal || []; S.pending = msg.pending; S.paused = msg.paused;
  S.done = msg.view.done;
  $("table").innerHTML = msg.svg;
  if (msg.recording) $("replay").textContent = "not recorded: " + msg.recording;
  else if (msg.replay) $("replay").textContent = "replay: " + msg.replay;
  if (msg.moves) reportMoves(msg.moves);
  $("table").classList.remove("waiting");
  for (const e of msg.events || []) {
    if (e.startsWith("lost race") || e.startsWith("your move")) flash(e, "warn"); else log(e, "info");
  }
  if (msg.failure) flash(msg.failure, "error");
  reselect();
  showSeats();
  showStatus();
  showPending();
  showButtons();
  showOver();
}

function reportMoves(moves) {
  const mine = moves[S.seat];
  if (!mine) return;
  if (mine.illegal || mine.lost_race) return; // the events say it, in the flash bar
  if (mine.submitted !== 0) log(`you: ${mine.name === "flip" ? "flip" : mine.words}`, "info");
}

// ------------------------------------------------------------------ panels
function cardOf(src) {
  const me = S.view && S.view.seats[S.seat];
  if (!me || !src) return "";
  if (src.zone === "nertz") return me.nertz_top || "";
  if (src.zone === "waste") return me.waste_top || "";
  if (src.zone === "stock") return "stock";
  if (src.zone === "work") {
    const pile = me.work[src.pile];
    const c = pile[pile.length - src.count];
    return src.count > 1 ? `${c} (+${src.count - 1})` : c;
  }
  return "";
}
function showSeats() {
  const tb = document.querySelector("#seats tbody");
  tb.innerHTML = "";
  for (const s of S.view.seats) {
    const tr = document.createElement("tr");
    if (s.you) tr.className = "you";
    const last = s.last;
    let lastHtml = "";
    if (last) {
      lastHtml = esc(last.name);
      if (last.lost_race) lastHtml += ' <span class="flag lost">LOST RACE</span>';
      if (last.illegal) lastHtml += ' <span class="flag illegal">ILLEGAL</span>';
    }
    tr.innerHTML = `<td>${s.seat} ${esc(s.name)}</td><td>${s.nertz_left}${s.nertz_top ? " " + esc(s.nertz_top) : ""}</td>` +
      `<td>${s.lake_cards}</td><td>${s.stock}</td><td>${s.waste_top ? esc(s.waste_top) : "-"} (${s.waste})</td><td>${lastHtml}</td>`;
    tb.appendChild(tr);
  }
}
function esc(t) { return String(t).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c])); }
function showStatus() {
  const v = S.view;
  if (!v) return;
  let t = `round ${v.round + 1} · tick ${v.tick} · ${S.mode === "step" ? "step mode" : "real time"}`;
  if (S.paused) t += " · PAUSED";
  if (v.done) t += " · game over";
  $("status").textContent = t;
  $("btn-pause").textContent = S.paused ? "Resume" : "Pause";
}
function showPending() {
  $("pending").textContent = S.pending ? `next tick: ${S.pending.words}` : "";
}
function legalOf(kind) { return S.legal.filter((m) => m.kind === kind); }
function showButtons() {
  const player = S.role === "player" && !S.done;
  $("btn-flip").disabled = !player || legalOf("flip").length === 0;
  $("btn-wait").disabled = !player;
  $("btn-pause").disabled = !player;
  $("btn-new").disabled = S.role !== "player";
  $("btn-call").hidden = legalOf("call").length === 0;
  $("btn-rotate").hidden = legalOf("rotate").length === 0;
}
function showOver() {
  const el = $("over");
  if (!S.done) { el.hidden = true; return; }
  const v = S.view;
  const rounds = v.round_scores.length;
  const score = (s) => (rounds > 1 ? s.match_score : rounds ? v.round_scores[0][s.seat] : s.round_score);
  const rows = v.seats.map((s) => `${esc(s.name)}: ${score(s)}`);
  const what = rounds > 1 ? `Match scores after ${rounds} rounds` : "Scores";
  el.innerHTML = `<b>Game over.</b> ${what}: ${rows.join(" · ")}. <button id="btn-new2">New game (N)</button>`;
  el.hidden = false;
  $("btn-new2").onclick = newGame;
}

// ------------------------------------------------------------------ clicks on the drawing
function hitInfo(el) {
  return {
    zone: el.dataset.zone,
    seat: el.dataset.seat === undefined ? null : Number(el.dataset.seat),
    pile: el.dataset.pile === undefined ? null : Number(el.dataset.pile),
    depth: el.dataset.depth === undefined ? null : Number(el.dataset.depth),
  };
}
function sourceOf(h) {
  if (h.zone === "nertz" || h.zone === "waste") return { zone: h.zone, pile: null, count: 1 };
  if (h.zone === "work" && h.depth > 0) return { zone: "work", pile: h.pile, count: h.depth };
  return null;
}
function destOf(h) {
  if (h.zone === "lake") return { zone: "lake", pile: null };
  if (h.zone === "work" && h.seat === S.seat) return { zone: "work", pile: h.pile };
  return null;
}
const sameSrc = (a, b) => a && b && a.zone === b.zone && a.pile === b.pile && a.count === b.count;
const sameDst = (a, b) => a && b && a.zone === b.zone && (a.zone === "lake" || a.pile === b.pile);
function movesFrom(src) { return S.legal.filter((m) => sameSrc(m.src, src)); }
function seatName(p) { return S.names[p] !== undefined ? S.names[p] : `seat ${p}`; }

function canPlay() {
  if (S.closed) { flash("not connected to the table: reload the page", "error"); return false; }
  if (S.role !== "player") { flash("this tab is a spectator: the seat is played in another tab", "error"); return false; }
  if (S.done) { flash("the game is over: press N for a new game", "warn"); return false; }
  return true;
}

function clickHit(el, dbl = false) {
  if (!canPlay()) return;
  const h = hitInfo(el);
  if (h.zone === "stock") {
    clearSelection();
    if (h.seat !== S.seat) { flash(`that is ${seatName(h.seat)}'s stock; yours is in the panel of seat ${S.seat}`, "error"); return; }
    doKind("flip", "flip");
    return;
  }
  if (S.selected === null) {
    if (h.zone === "lake") { flash("pick one of your cards first, then the lake", "warn"); return; }
    if (h.seat !== S.seat) { flash(`that is ${seatName(h.seat)}'s card: you play seat ${S.seat}`, "error"); return; }
    const src = sourceOf(h);
    if (!src) { flash("an empty pile: pick a card to move here first", "warn"); return; }
    const moves = movesFrom(src);
    if (moves.length === 0) { flash(`${cardOf(src)} has no legal move now`, "error"); return; }
    if (dbl) { const lake = moves.filter((m) => m.dst && m.dst.zone === "lake"); if (lake.length) { play(lake); return; } }
    select(src);
    return;
  }
  // a source is selected: this click names where it goes
  const src = S.selected;
  if (h.seat === S.seat && sameSrc(sourceOf(h), src)) { clearSelection(); return; }
  const dst = destOf(h);
  const matches = dst ? movesFrom(src).filter((m) => sameDst(m.dst, dst)) : [];
  if (matches.length > 0) { play(matches); return; }
  const other = h.seat === S.seat ? sourceOf(h) : null;
  if (other && movesFrom(other).length > 0) {  // another of your cards: it becomes the selection
    const was = cardOf(src);
    select(other);
    log(`${was} has no move there; ${cardOf(other)} is selected instead`, "warn");
    return;
  }
  const where = !dst ? (h.seat !== S.seat && h.seat !== null ? `${seatName(h.seat)}'s pile (cards go to the lake or your own work piles)` : "there")
    : dst.zone === "lake" ? "the lake" : `work pile ${dst.pile}`;
  flash(`not legal: ${cardOf(src)} cannot go to ${where} now`, "error");
  clearSelection();
}

function select(src) {
  S.selected = src;
  reselect();
  const n = movesFrom(src).length;
  flash(`${cardOf(src)} selected: click where it goes (${n} legal move${n === 1 ? "" : "s"} shown in green); Esc drops it`, "info", false);
}
function clearSelection() { S.selected = null; reselect(); }
function reselect() {
  const root = $("table");
  root.querySelectorAll(".selected, .target").forEach((e) => e.classList.remove("selected", "target"));
  const src = S.selected;
  if (!src) return;
  if (movesFrom(src).length === 0) { S.selected = null; return; }
  for (const el of root.querySelectorAll(".hit")) {
    const h = hitInfo(el);
    if (h.seat === S.seat && h.zone === src.zone && (src.zone !== "work" || (h.pile === src.pile && h.depth > 0 && h.depth <= src.count))) {
      el.classList.add("selected");
    }
  }
  for (const m of movesFrom(src)) {
    if (!m.dst) continue;
    const q = m.dst.zone === "lake" ? '.hit[data-zone="lake"]' : `.hit[data-zone="work"][data-seat="${S.seat}"][data-pile="${m.dst.pile}"]`;
    const els = [...root.querySelectorAll(q)];
    if (m.dst.zone === "work") {  // the pile's exposed card (depth 1) or its empty place (depth 0)
      const top = els.filter((e) => Number(e.dataset.depth) <= 1);
      top.forEach((e) => e.classList.add("target"));
    } else {
      els.forEach((e) => e.classList.add("target"));
    }
  }
}

function play(matches) {
  if (matches.length === 1) { sendMove(matches[0]); return; }
  const box = $("chooser");
  box.innerHTML = "<b>Which move?</b>";
  for (const m of matches) {
    const b = document.createElement("button");
    b.textContent = m.words;
    b.onclick = () => { box.hidden = true; sendMove(m); };
    box.appendChild(b);
  }
  const c = document.createElement("button");
  c.textContent = "cancel";
  c.onclick = () => { box.hidden = true; clearSelection(); };
  box.appendChild(c);
  box.hidden = false;
}
function sendMove(m) {
  clearSelection();
  if (send({ type: "move", action: m.action, seat: S.seat, tick: S.view.tick }) && S.mode === "step") {
    $("table").classList.add("waiting");
    $("flash").textContent = "";
    $("flash").className = "flash";
  }
}
function doKind(kind, label) {
  if (!canPlay()) return;
  const m = legalOf(kind);
  if (m.length === 0) { flash(`${label} is not legal now`, "error"); return; }
  sendMove(m[0]);
}
function newGame() {
  if (S.role !== "player") { flash("this tab is a spectator: the seat is played in another tab", "error"); return; }
  if (!S.done && !confirm("Leave this game and deal a new one? (this game's replay stays on disk)")) return;
  send({ type: "new_game" });
}

// pointer handling: a click (down and up on the same card) or a drag (down on a card, up on a destination)
function hitAt(x, y) {
  const el = document.elementFromPoint(x, y);
  return el ? el.closest("#table .hit") : null;
}
$("table").addEventListener("pointerdown", (ev) => {
  if (ev.button !== 0) return;
  const el = ev.target.closest(".hit");
  S.down = el ? { el, x: ev.clientX, y: ev.clientY } : null;
  S.dragging = false;
});
window.addEventListener("pointermove", (ev) => {
  if (!S.down || S.role !== "player") return;
  const d = Math.hypot(ev.clientX - S.down.x, ev.clientY - S.down.y);
  if (!S.dragging && d > 8) {
    const h = hitInfo(S.down.el);
    const src = h.seat === S.seat ? sourceOf(h) : null;
    if (!src || movesFrom(src).length === 0) return;
    S.dragging = true;
    S.selected = src;
    reselect();
    $("ghost").textContent = cardOf(src);
    $("ghost").hidden = false;
  }
  if (S.dragging) { $("ghost").style.left = ev.clientX + 10 + "px"; $("ghost").style.top = ev.clientY + 10 + "px"; }
});
window.addEventListener("pointerup", (ev) => {
  const down = S.down;
  S.down = null;
  $("ghost").hidden = true;
  if (!down) return;
  const target = hitAt(ev.clientX, ev.clientY);
  if (S.dragging) {
    S.dragging = false;
    if (!target) { flash("dropped outside the table: nothing moved", "warn"); clearSelection(); return; }
    clickHit(target);
    return;
  }
  if (target === down.el) clickHit(target);
});
$("table").addEventListener("dblclick", (ev) => {
  const el = ev.target.closest(".hit");
  if (!el) return;
  clearSelection();
  clickHit(el, true);
});

// ------------------------------------------------------------------ keys and buttons
document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key.toLowerCase();
  if (k === "f" || k === " ") { ev.preventDefault(); clearSelection(); doKind("flip", "flip"); }
  else if (k === "w" || k === ".") { if (canPlay()) { clearSelection(); send({ type: "wait" }); } }
  else if (k === "escape") { clearSelection(); $("chooser").hidden = true; }
  else if (k === "p") { if (S.mode !== "step") send({ type: "pause" }); }
  else if (k === "c") doKind("call", "calling Nertz");
  else if (k === "r") doKind("rotate", "rotating the stock");
  else if (k === "n") newGame();
  else if (k === "l") {
    if (!S.selected) { flash("select a card first, then L plays it to the lake", "warn"); return; }
    const m = movesFrom(S.selected).filter((x) => x.dst && x.dst.zone === "lake");
    if (m.length) play(m); else { flash(`not legal: ${cardOf(S.selected)} cannot go to the lake now`, "error"); clearSelection(); }
  }
});
$("btn-flip").onclick = () => doKind("flip", "flip");
$("btn-wait").onclick = () => { if (canPlay()) send({ type: "wait" }); };
$("btn-pause").onclick = () => send({ type: "pause" });
$("btn-call").onclick = () => doKind("call", "calling Nertz");
$("btn-rotate").onclick = () => doKind("rotate", "rotating the stock");
$("btn-new").onclick = newGame;

connect();
