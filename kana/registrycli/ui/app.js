// The page of sample-generic-controlplane registry ui: it reads the views of
// the local server (/api/...), and reads them again whenever the server's
// event stream says a newer one exists. Everything it shows comes from the
// server as text and is put in the page as text, never as markup.
"use strict";

const PAGE = 100;
// MAX_WINDOW is the most items one list shows at once (the server answers
// up to 1000 a request).
const MAX_WINDOW = 500;

const state = {
  version: 0,
  // windows: for the roots ("") and each expanded allocation (by key), the
  // window of children loaded: {offset, limit}. data: what was loaded.
  windows: new Map([["", { offset: 0, limit: PAGE }]]),
  data: new Map(),
  waitingLimit: PAGE,
  claim: null, // the claim whose panel is open
  whois: null, // the last query looked up
  focusKey: null, // the tree item that has the tree's tab stop
  found: null, // the item a link led to
  refreshing: false,
  again: false,
};

function keyOf(claim, prefix) {
  return claim + " " + prefix;
}

// el makes an element: props are properties (or attributes, for names with
// a dash or "role"), children are nodes or strings (as text).
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.includes("-") || k === "role") e.setAttribute(k, v === true ? "" : String(v));
    else if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e[k] = v;
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function getJSON(path) {
  const res = await fetch(path, { headers: { Accept: "application/json" } });
  let body;
  try {
    body = await res.json();
  } catch {
    body = { error: res.status + " " + res.statusText };
  }
  if (!res.ok) {
    const err = new Error(body.error || res.statusText);
    err.status = res.status;
    throw err;
  }
  return body;
}

function query(params) {
  return new URLSearchParams(params).toString();
}

// age writes how long ago a date was, as kubectl does: 45s, 5m, 3h, 2d.
function age(date) {
  const s = Math.max(0, Math.floor((Date.now() - new Date(date).getTime()) / 1000));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.floor(s / 60) + "m";
  if (s < 172800) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}

function setLive(cls, text) {
  const live = document.getElementById("live");
  live.className = cls;
  live.textContent = text;
}

// refresh reads everything the page shows; a call while one runs makes it
// run once more when done.
async function refresh() {
  if (state.refreshing) {
    state.again = true;
    return;
  }
  state.refreshing = true;
  try {
    do {
      state.again = false;
      await load();
    } while (state.again);
  } catch (err) {
    setLive("off", "error: " + err.message);
  } finally {
    state.refreshing = false;
  }
}

async function load() {
  const [ov, nodes, waiting] = await Promise.all([
    getJSON("/api/overview"),
    loadNodes(""),
    getJSON("/api/waiting?" + query({ limit: state.waitingLimit })),
  ]);
  renderHeader(ov);
  if (ov.state !== "Ready") {
    renderProblem(ov);
    state.version = ov.version;
    return;
  }
  document.getElementById("problem").hidden = true;
  document.getElementById("registry").hidden = false;
  const stale = document.getElementById("stale");
  stale.hidden = !ov.stale;
  stale.textContent = ov.stale || "";
  state.data.set("", nodes);
  for (const key of state.windows.keys()) {
    if (key === "") continue;
    try {
      state.data.set(key, await loadNodes(key));
    } catch (err) {
      if (err.status !== 404) throw err;
      state.windows.delete(key); // released since
      state.data.delete(key);
    }
  }
  renderPools(ov.pools);
  renderTree();
  renderWaiting(waiting);
  if (state.claim) await showClaim(state.claim, false);
  if (state.whois) await lookUp(state.whois);
  state.version = ov.version;
  if (ov.stale) setLive("off", "the control plane is not answering");
  else setLive("on", "live · updated " + new Date(ov.built).toLocaleTimeString());
}

function loadNodes(key) {
  const w = state.windows.get(key);
  const params = { offset: w.offset, limit: w.limit };
  if (key !== "") {
    const [claim, prefix] = key.split(" ");
    Object.assign(params, { claim, prefix });
  }
  return getJSON("/api/nodes?" + query(params));
}

function renderHeader(ov) {
  const who = ov.user ? "as " + ov.user : "as the kubeconfig's user";
  const counts = ov.state === "Ready" ? ` · ${ov.claims} claims, ${ov.allocations} allocations, ${ov.waiting} waiting` : "";
  document.getElementById("where").textContent = `${ov.server} ${who}${counts}`;
}

function renderProblem(ov) {
  document.getElementById("registry").hidden = true;
  const p = ov.problem;
  const box = document.getElementById("problem");
  if (!p) {
    box.hidden = true;
    setLive("", "connecting to " + ov.server);
    return;
  }
  box.hidden = false;
  document.getElementById("problem-title").textContent = p.title;
  document.getElementById("problem-message").textContent = p.message;
  document.getElementById("problem-needed").hidden = !p.needed;
  document.getElementById("problem-needed-text").textContent = p.needed || "";
  document.getElementById("problem-grant").textContent = p.grant || "";
  document.getElementById("problem-error").textContent = p.error;
  setLive("off", p.reason);
}

function claimButton(claim) {
  return el("button", { type: "button", class: "link", tabIndex: -1, onclick: () => showClaim(claim, true) }, claim);
}

function revealButton(claim, prefix, label) {
  return el("button", { type: "button", class: "link", onclick: () => reveal(claim, prefix) }, label || `${prefix} (${claim})`);
}

function renderPools(pools) {
  const body = document.querySelector("#pools tbody");
  document.getElementById("pools-empty").hidden = pools.length > 0;
  document.getElementById("pools").hidden = pools.length === 0;
  body.replaceChildren(
    ...pools.map((p) => {
      let util;
      if (p.bar) {
        util = el("div", { class: "bar", role: "img", "aria-label": p.summary, title: p.summary },
          ["allocated", "reserved", "cooling"].map((s) => {
            const seg = el("span", { class: s });
            seg.style.width = p.bar[s] + "%";
            return seg;
          }));
      } else if (p.blocks) {
        const unit = p.blocks.length === 128 ? "addresses" : `/${p.blocks.length}s`;
        util = el("span", { class: "blocks" }, `${p.blocks.used} of ${p.blocks.total} ${unit} in use (${p.blocks.percent})`);
      } else {
        util = el("span", { class: "meta" }, p.summary);
      }
      // The cell reads as registry pools' column; its title names more.
      const more = p.tenantCount > p.tenantNames.length ? ` +${p.tenantCount - p.tenantNames.length} more` : "";
      const claim = claimButton(p.claim);
      claim.tabIndex = 0;
      return el("tr", { dataset: { pool: keyOf(p.claim, p.prefix) } },
        el("td", {}, claim),
        el("td", { class: "prefix" }, revealButton(p.claim, p.prefix, p.prefix)),
        el("td", {}, util),
        el("td", { class: "num" }, p.used),
        el("td", { class: "num" }, p.allocated),
        el("td", { class: "num" }, p.reserved),
        el("td", { class: "num" }, p.free),
        el("td", { class: "prefix" }, p.largestFree),
        el("td", { class: "num" }, p.subPrefixes),
        el("td", { title: p.tenantNames.join(", ") + more }, p.tenants),
        el("td", {}, p.policy));
    }));
}

// The tree: a WAI-ARIA tree view with one tab stop, arrow keys to move.
function renderTree() {
  const tree = document.getElementById("tree");
  const hadFocus = tree.contains(document.activeElement);
  tree.replaceChildren(...treeItems("", 1));
  let stop = state.focusKey && tree.querySelector(`[data-key="${CSS.escape(state.focusKey)}"]`);
  if (!stop) stop = tree.querySelector('[role="treeitem"]');
  if (stop) {
    stop.tabIndex = 0;
    state.focusKey = stop.dataset.key;
    if (hadFocus) stop.focus({ preventScroll: true });
  }
}

function treeItems(key, level) {
  const d = state.data.get(key);
  if (!d) return [];
  const items = [];
  if (d.offset > 0) items.push(moreItem(key, level, -1, `Show the ${Math.min(PAGE, d.offset)} before`));
  d.items.forEach((n, i) => items.push(nodeItem(n, level, d.offset + i + 1, d.total)));
  if (d.offset + d.items.length < d.total) {
    items.push(moreItem(key, level, +1, `Show ${Math.min(PAGE, d.total - d.offset - d.items.length)} more of ${d.total}`));
  }
  for (const r of d.waiting || []) items.push(waitingItem(r, level));
  if (d.waitingTotal > (d.waiting || []).length) {
    items.push(el("li", { role: "treeitem", tabIndex: -1, "aria-level": level, dataset: { key: "waiting-more " + key } },
      el("div", { class: "row" }, el("span", { class: "twisty", "aria-hidden": "true" }),
        el("span", { class: "meta" }, `${d.waitingTotal - d.waiting.length} more waiting: see Waiting below`))));
  }
  return items;
}

function nodeItem(n, level, pos, total) {
  const key = keyOf(n.claim, n.prefix);
  const open = state.windows.has(key);
  const expandable = n.children > 0 || n.waiting > 0;
  const meta = [n.name ? "record " + n.name : "", n.reference !== "<none>" ? n.reference : "", "Allocated " + age(n.date) + " ago"].filter(Boolean).join(" · ");
  const row = el("div", { class: "row" },
    el("span", { class: "twisty", "aria-hidden": "true" }, expandable ? (open ? "▾" : "▸") : ""),
    el("span", { class: "prefix" }, n.prefix),
    claimButton(n.claim),
    el("span", { class: "meta" }, meta),
    n.delegable ? el("span", { class: "badge" }, `pool · ${n.children} delegated`) : null,
    n.waiting ? el("span", { class: "badge status-Unavailable" }, `${n.waiting} waiting`) : null,
    n.releasedFrom ? el("span", { class: "badge" }, `delegated from ${n.releasedFrom.prefix} (${n.releasedFrom.claim}, released)`) : null,
    n.description ? el("span", { class: "meta" }, n.description) : null);
  const li = el("li", {
    role: "treeitem", tabIndex: -1, "aria-level": level, "aria-posinset": pos, "aria-setsize": total,
    "aria-expanded": expandable ? String(open) : null, dataset: { key, claim: n.claim }, class: state.found === key ? "found" : "",
  }, row);
  row.addEventListener("click", (e) => {
    if (e.target.closest("button")) return;
    focusItem(li);
    if (expandable) toggle(key);
  });
  if (open) li.append(el("ul", { role: "group" }, treeItems(key, level + 1)));
  return li;
}

function waitingItem(r, level) {
  const li = el("li", { role: "treeitem", tabIndex: -1, "aria-level": level, dataset: { key: "waiting " + r.claim + " " + (r.name || r.prefix), claim: r.claim } },
    el("div", { class: "row" },
      el("span", { class: "twisty", "aria-hidden": "true" }),
      el("span", { class: "prefix" }, r.prefix || `/${r.prefixLength}`),
      claimButton(r.claim),
      el("span", { class: "status-" + r.status }, r.status),
      el("span", { class: "meta" }, r.message || ""),
      r.waitsFor ? el("span", { class: "meta" }, "waits for ", waitsForCell(r)) : null));
  // One tab stop in the tree: Enter follows the link.
  for (const b of li.querySelectorAll("button")) b.tabIndex = -1;
  if (r.waitsFor && r.waitsFor.prefix) Object.assign(li.dataset, { waitsClaim: r.waitsFor.claim, waitsPrefix: r.waitsFor.prefix });
  return li;
}

function moreItem(key, level, direction, label) {
  const li = el("li", { role: "treeitem", tabIndex: -1, "aria-level": level, class: "more", dataset: { key: "more " + direction + " " + key, more: key, direction } },
    el("div", { class: "row" }, el("span", { class: "twisty", "aria-hidden": "true" }), el("button", { type: "button", class: "link", tabIndex: -1 }, label)));
  li.addEventListener("click", () => showMore(key, direction));
  return li;
}

async function showMore(key, direction) {
  // A window grows to MAX_WINDOW items, then slides.
  const w = state.windows.get(key);
  if (direction < 0) {
    const back = Math.min(PAGE, w.offset);
    w.offset -= back;
    w.limit = Math.min(w.limit + back, MAX_WINDOW);
  } else if (w.limit + PAGE > MAX_WINDOW) {
    w.offset += PAGE;
  } else {
    w.limit += PAGE;
  }
  const before = state.data.get(key);
  // The focus goes to the first item the click brought in.
  const first = direction < 0 ? w.offset : before.offset + before.items.length;
  const d = await loadNodes(key);
  state.data.set(key, d);
  const n = d.items[first - d.offset];
  state.focusKey = n ? keyOf(n.claim, n.prefix) : null;
  renderTree();
  const li = state.focusKey && itemByKey(state.focusKey);
  if (li) focusItem(li);
}

async function toggle(key) {
  if (state.windows.has(key)) {
    state.windows.delete(key);
    state.data.delete(key);
  } else {
    state.windows.set(key, { offset: 0, limit: PAGE });
    state.data.set(key, await loadNodes(key));
  }
  state.focusKey = key;
  renderTree();
  const li = itemByKey(key);
  if (li) li.focus();
}

function itemByKey(key) {
  return document.querySelector(`#tree [data-key="${CSS.escape(key)}"]`);
}

function focusItem(li) {
  for (const other of document.querySelectorAll('#tree [role="treeitem"][tabindex="0"]')) other.tabIndex = -1;
  li.tabIndex = 0;
  state.focusKey = li.dataset.key;
  li.focus();
}

function onTreeKey(e) {
  const li = e.target.closest('[role="treeitem"]');
  if (!li) return;
  const items = [...document.querySelectorAll('#tree [role="treeitem"]')];
  const i = items.indexOf(li);
  const expanded = li.getAttribute("aria-expanded");
  let handled = true;
  switch (e.key) {
    case "ArrowDown":
      if (i + 1 < items.length) focusItem(items[i + 1]);
      break;
    case "ArrowUp":
      if (i > 0) focusItem(items[i - 1]);
      break;
    case "Home":
      focusItem(items[0]);
      break;
    case "End":
      focusItem(items[items.length - 1]);
      break;
    case "ArrowRight":
      if (expanded === "false") toggle(li.dataset.key);
      else if (expanded === "true" && li.querySelector('[role="treeitem"]')) focusItem(li.querySelector('[role="treeitem"]'));
      break;
    case "ArrowLeft": {
      if (expanded === "true") {
        toggle(li.dataset.key);
        break;
      }
      const parent = li.parentElement.closest('[role="treeitem"]');
      if (parent) focusItem(parent);
      break;
    }
    case "Enter":
      if (li.dataset.more !== undefined) showMore(li.dataset.more, Number(li.dataset.direction));
      else if (li.dataset.waitsClaim) reveal(li.dataset.waitsClaim, li.dataset.waitsPrefix);
      else if (li.dataset.claim) showClaim(li.dataset.claim, true);
      break;
    case " ":
      if (expanded !== null) toggle(li.dataset.key);
      break;
    default:
      handled = false;
  }
  if (handled) e.preventDefault();
}

// reveal opens the tree down to an allocation and puts the focus on it.
async function reveal(claim, prefix) {
  let steps;
  try {
    steps = await getJSON("/api/path?" + query({ claim, prefix }));
  } catch (err) {
    alertIn(document.getElementById("whois-result"), `${prefix} of ${claim}: ${err.message}`);
    return;
  }
  let parent = "";
  for (const s of steps) {
    const w = state.windows.get(parent) || { offset: 0, limit: PAGE };
    if (s.index < w.offset || s.index >= w.offset + w.limit) {
      w.offset = Math.max(0, s.index - PAGE / 2);
      w.limit = PAGE;
    }
    state.windows.set(parent, w);
    state.data.set(parent, await loadNodes(parent));
    parent = keyOf(s.claim, s.prefix);
  }
  const key = keyOf(claim, prefix);
  state.found = key;
  state.focusKey = key;
  renderTree();
  const li = itemByKey(key);
  if (li) {
    focusItem(li);
    li.scrollIntoView({ block: "center" });
  }
}

function renderWaiting(w) {
  document.getElementById("waiting-empty").hidden = w.total > 0;
  document.getElementById("waiting").hidden = w.total === 0;
  const more = document.getElementById("waiting-more");
  // The first 1000 are listed; whois and the claims' panels reach the rest.
  more.hidden = w.items.length >= w.total || w.items.length >= 1000;
  more.textContent = `Show ${Math.min(PAGE, w.total - w.items.length)} more of ${w.total}`;
  document.querySelector("#waiting tbody").replaceChildren(
    ...w.items.map((r) => {
      const claim = claimButton(r.claim);
      claim.tabIndex = 0;
      return el("tr", {},
        el("td", {}, claim),
        el("td", { class: "prefix" }, r.prefix || `/${r.prefixLength}`),
        el("td", { class: "status-" + r.status }, r.status),
        el("td", {}, r.message || (r.status === "Pending" ? "not decided yet" : r.reason || "")),
        el("td", {}, waitsForCell(r)));
    }));
}

function waitsForCell(r) {
  const t = r.waitsFor;
  if (!t) return r.status === "Pending" ? "the allocator" : "";
  if (!t.prefix) return ["room in the pools of ", claimButton(t.claim)];
  return revealButton(t.claim, t.prefix);
}

async function showClaim(name, focus) {
  const panel = document.getElementById("claim-panel");
  let c;
  try {
    c = await getJSON("/api/claim?" + query({ name }));
  } catch (err) {
    if (err.status !== 404) throw err;
    c = { name, records: [], waiting: "", gone: true };
  }
  state.claim = name;
  panel.hidden = false;
  document.getElementById("claim-title").textContent = "NetworkClaim " + name;
  document.getElementById("claim-waiting").textContent = c.gone ? "This claim is gone." : c.waiting;
  document.querySelector("#claim-records tbody").replaceChildren(
    ...c.records.map((r) =>
      el("tr", {},
        el("td", { class: "prefix" }, r.prefix || `/${r.prefixLength} from ${r.from ? r.from.claim : "?"}`),
        el("td", { class: "status-" + r.status }, r.status),
        el("td", {}, r.reference ? (r.reference.group ? `${r.reference.resource}.${r.reference.group}` : r.reference.resource) : "<none>"),
        el("td", {}, r.date ? age(r.date) : "-"),
        el("td", {}, r.message || r.description || ""),
        el("td", {}, r.status === "Allocated" ? revealButton(name, r.prefix, "show in the tree") : waitsForCell(r)))));
  if (focus) panel.focus();
}

async function lookUp(q) {
  const out = document.getElementById("whois-result");
  let records;
  try {
    records = await getJSON("/api/whois?" + query({ q }));
  } catch (err) {
    alertIn(out, err.message);
    return;
  }
  state.whois = q;
  if (records.length === 0) {
    out.replaceChildren(el("p", {}, `No NetworkClaim holds ${q}`));
    return;
  }
  out.replaceChildren(
    el("table", { id: "whois-table" },
      el("thead", {}, el("tr", {}, ["Prefix", "Claim", "Reference", "Allocated", "Chain", "Description"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {},
        records.map((r) => {
          const claim = claimButton(r.claim);
          claim.tabIndex = 0;
          const chain = [];
          (r.chain || [{ claim: r.claim, prefix: r.prefix }]).forEach((s, i) => {
            if (i > 0) chain.push(" ← ");
            chain.push(s.released ? `${s.claim} (released)` : revealButton(s.claim, s.prefix, s.claim));
          });
          return el("tr", {},
            el("td", { class: "prefix" }, revealButton(r.claim, r.prefix, r.prefix)),
            el("td", {}, claim),
            el("td", {}, r.reference ? (r.reference.group ? `${r.reference.resource}.${r.reference.group}` : r.reference.resource) : "<none>"),
            el("td", {}, r.date ? new Date(r.date).toISOString().replace(".000Z", "Z") : "-"),
            el("td", { class: "chain" }, chain),
            el("td", {}, r.description || ""));
        }))));
}

function alertIn(box, message) {
  box.replaceChildren(el("p", { class: "error", role: "alert" }, message));
}

function follow() {
  const events = new EventSource("/api/events");
  events.addEventListener("open", () => setLive("on", "live"));
  events.addEventListener("error", () => setLive("off", "reconnecting"));
  events.addEventListener("view", (e) => {
    const v = JSON.parse(e.data);
    if (v.version !== state.version) refresh();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("tree").addEventListener("keydown", onTreeKey);
  document.getElementById("whois-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = document.getElementById("whois-q").value.trim();
    if (q) lookUp(q);
  });
  document.getElementById("claim-close").addEventListener("click", () => {
    state.claim = null;
    document.getElementById("claim-panel").hidden = true;
  });
  document.getElementById("waiting-more").addEventListener("click", () => {
    state.waitingLimit = Math.min(state.waitingLimit + PAGE, 1000);
    refresh();
  });
  refresh();
  follow();
});
