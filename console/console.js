// The operations console: the marketplace on a map, live from the ops routes, or replayed
// from a simulation's replay file. Plain ES module, no build step, nothing from other hosts.

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const LIVE = ["open", "assigned", "in_progress"];
const LETTER = { open: "O", assigned: "A", in_progress: "W", completed: "✓", cancelled: "✕", expired: "⌛" };
const WAVE_MS = 4000; // how long an offer wave stays drawn (in the clock of what is shown)
const LINE_MS = 4000;

const state = {
  token: null,
  mode: "live", // live | replay
  bbox: null, // [minLng, minLat, maxLng, maxLat]: what the map shows (zoom and pan move it)
  area: null, // the configured area (config.json's bbox, or ?bbox=), outlined on the map
  border: null, // the replayed city's border, [[lat, lng], ...]
  tiles: null,
  jobs: new Map(),
  workers: new Map(),
  events: [],
  applicants: new Map(), // job id -> Map(worker id -> application), from application events
  chosen: null, // the open job whose applicants are shown
  waves: [],
  lines: [],
  summary: null,
  cursor: null,
  timers: [],
  // Push (the WebSocket): while it is open the console listens; while it is down it polls.
  socket: null,
  pushing: false,
  pushUrl: null,
  seen: new Set(), // event ids applied: push and the fallback's pulls overlap, ids keep them apart
  // The clock of what is shown: the wall clock live; the replayed city's clock in a replay
  // (as the product wrote its times, so leases count down as they did).
  now: () => Date.now(),
  scale: 1, // seconds shown per second of the product's clock (the simulation's speed)
};

// -- signing in -----------------------------------------------------------------------------
// Locally, `dispatch console` prints an address with a token in its fragment (never sent to
// the server). In AWS, Cognito's hosted page, with the authorization code and PKCE (RFC 7636):
// the page keeps a secret (the verifier) for the session, sends only its SHA-256 along to the
// sign-in page, gets a one-time code back in its address, and trades code and verifier for
// the tokens at the token endpoint. No token ever travels in an address.

function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const fromLink = fragment.get("token");
  if (fromLink) {
    sessionStorage.setItem("dispatch-token", fromLink);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("dispatch-token");
}

const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

async function signIn(signinUrl) {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem("dispatch-pkce", JSON.stringify({ verifier, state }));
  const to = new URL(signinUrl);
  to.searchParams.set("code_challenge", challenge);
  to.searchParams.set("code_challenge_method", "S256");
  to.searchParams.set("state", state);
  location.assign(to.toString());
}

// Back from the sign-in page with ?code=&state=: the tokens for the code, or null.
async function redeemCode(signinUrl) {
  const query = new URLSearchParams(location.search);
  const code = query.get("code");
  if (!code || !signinUrl) return null;
  const state = query.get("state");
  query.delete("code");
  query.delete("state");
  history.replaceState(null, "", location.pathname + (query.toString() ? `?${query}` : ""));
  const saved = JSON.parse(sessionStorage.getItem("dispatch-pkce") || "null");
  sessionStorage.removeItem("dispatch-pkce");
  if (!saved || saved.state !== state) return null; // not the sign-in this page started
  const authorize = new URL(signinUrl);
  const reply = await fetch(new URL("/oauth2/token", authorize), {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: authorize.searchParams.get("client_id"),
      redirect_uri: authorize.searchParams.get("redirect_uri"),
      code,
      code_verifier: saved.verifier,
    }),
  });
  if (!reply.ok) return null;
  const token = (await reply.json()).id_token;
  if (token) sessionStorage.setItem("dispatch-token", token);
  return token || null;
}

function notice(text) {
  const box = $("notice");
  box.textContent = text;
  box.hidden = !text;
}

class Refused extends Error {}

async function api(path) {
  const reply = await fetch(path, { headers: { Authorization: `Bearer ${state.token}` } });
  if (reply.status === 401 || reply.status === 403) throw new Refused(String(reply.status));
  if (!reply.ok) throw new Error(`${path}: ${reply.status}`);
  return reply.json();
}

// -- the map (Web Mercator, drawn in screen pixels) ----------------------------------------

function project(lat, lng) {
  const s = Math.sin((Math.max(-85, Math.min(85, lat)) * Math.PI) / 180);
  return [(lng + 180) / 360, 0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)];
}

function view() {
  const svg = $("map");
  const { width, height } = svg.getBoundingClientRect();
  const [minLng, minLat, maxLng, maxLat] = state.bbox;
  const [x0, y1] = project(minLat, minLng);
  const [x1, y0] = project(maxLat, maxLng);
  const k = Math.min(width / (x1 - x0), height / (y1 - y0));
  const dx = (width - k * (x1 - x0)) / 2;
  const dy = (height - k * (y1 - y0)) / 2;
  const midLat = (minLat + maxLat) / 2;
  const metresPerPixel = (40075016.7 * Math.cos((midLat * Math.PI) / 180)) / k;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  return {
    at: (lat, lng) => {
      const [x, y] = project(lat, lng);
      return [dx + k * (x - x0), dy + k * (y - y0)];
    },
    // The inverse: the [lat, lng] at a point of the screen.
    place: (px, py) => {
      const x = (px - dx) / k + x0;
      const y = (py - dy) / k + y0;
      const lat = (2 * Math.atan(Math.exp((0.5 - y) * 2 * Math.PI)) - Math.PI / 2) * (180 / Math.PI);
      return [lat, x * 360 - 180];
    },
    metresPerPixel,
    k,
    x0,
    y0,
    dx,
    dy,
    width,
    height,
  };
}

function keyed(group, items, key, make, update) {
  const g = $(group);
  const seen = new Set();
  for (const item of items) {
    const id = key(item);
    seen.add(id);
    let node = g.querySelector(`[data-key="${CSS.escape(id)}"]`);
    if (!node) {
      node = make(item);
      node.dataset.key = id;
      g.appendChild(node);
    }
    update(node, item);
  }
  for (const node of [...g.children]) if (!seen.has(node.dataset.key)) node.remove();
}

function el(name, attributes = {}) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  return node;
}

function inView(lat, lng) {
  const [minLng, minLat, maxLng, maxLat] = state.bbox;
  return lng >= minLng && lng <= maxLng && lat >= minLat && lat <= maxLat;
}

function drawTiles(v) {
  const g = $("tiles");
  g.replaceChildren();
  if (!state.tiles) return;
  const zoom = Math.max(0, Math.min(18, Math.round(Math.log2(v.k / 256))));
  const n = 2 ** zoom;
  const size = v.k / n;
  const firstX = Math.floor(v.x0 * n - v.dx / size);
  const firstY = Math.floor(v.y0 * n - v.dy / size);
  for (let x = firstX; x * size < v.x0 * v.k + v.width; x += 1) {
    for (let y = firstY; y * size < v.y0 * v.k + v.height; y += 1) {
      if (x < 0 || y < 0 || x >= n || y >= n) continue;
      const url = state.tiles.replace("{z}", zoom).replace("{x}", x).replace("{y}", y);
      g.appendChild(el("image", {
        href: url, x: v.dx + x * size - v.x0 * v.k, y: v.dy + y * size - v.y0 * v.k,
        width: size, height: size, opacity: 0.6,
      }));
    }
  }
}

// A round step of 1, 2 or 5 times a power of ten, at least `least`.
function niceStep(least) {
  const power = 10 ** Math.floor(Math.log10(least));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= least);
}

function degrees(value, positive, negative, step) {
  const digits = Math.max(0, -Math.floor(Math.log10(step)));
  return `${Math.abs(value).toFixed(digits)}°${value >= 0 ? positive : negative}`;
}

// Lines of latitude and longitude at round steps, labelled at the map's left and bottom edges.
function drawGrid(v) {
  const g = $("grid");
  g.replaceChildren();
  const [north, west] = v.place(0, 0);
  const [south, east] = v.place(v.width, v.height);
  const step = niceStep(Math.max(east - west, north - south) / 8);
  for (let lng = Math.ceil(west / step) * step; lng <= east; lng += step) {
    const [x] = v.at(south, lng);
    g.append(el("line", { class: "grid", x1: x, x2: x, y1: 0, y2: v.height, "data-lng": lng.toFixed(6) }));
    const label = el("text", { class: "grid-label", x: x + 3, y: v.height - 4 });
    label.textContent = degrees(lng, "E", "W", step);
    g.append(label);
  }
  for (let lat = Math.ceil(south / step) * step; lat <= north; lat += step) {
    const [, y] = v.at(lat, west);
    g.append(el("line", { class: "grid", x1: 0, x2: v.width, y1: y, y2: y, "data-lat": lat.toFixed(6) }));
    const label = el("text", { class: "grid-label", x: 4, y: y - 3 });
    label.textContent = degrees(lat, "N", "S", step);
    g.append(label);
  }
}

// A bar of a round length (about a hundred pixels) at the bottom right, clear of the labels.
function drawScale(v) {
  const g = $("scale");
  g.replaceChildren();
  const metres = niceStep(v.metresPerPixel * 100);
  const width = metres / v.metresPerPixel;
  const x = v.width - width - 22;
  const y = v.height - 24;
  g.setAttribute("data-metres", metres);
  g.setAttribute("data-pixels", width.toFixed(2));
  g.append(
    el("rect", { class: "scale-back", x: x - 6, y: y - 16, width: width + 12, height: 24, rx: 3 }),
    el("path", { class: "scale-bar", d: `M${x},${y - 5}V${y}H${x + width}V${y - 5}` }),
  );
  const label = el("text", { class: "scale-label", x: x + width / 2, y: y - 4 });
  label.textContent = metres >= 1000 ? `${metres / 1000} km` : `${metres} m`;
  g.append(label);
}

function render() {
  if (!state.bbox) return;
  const v = view();
  drawTiles(v);
  const area = $("area");
  area.replaceChildren();
  const box = state.area || state.bbox;
  const outline = state.border || [
    [box[1], box[0]], [box[1], box[2]], [box[3], box[2]], [box[3], box[0]],
  ];
  const polygon = el("polygon", {
    class: "area", "data-area": state.border ? "border" : "configured",
    points: outline.map(([lat, lng]) => v.at(lat, lng).join(",")).join(" "),
  });
  polygon.appendChild(el("title"));
  polygon.firstChild.textContent = state.border ? "the simulated city's border" : "the configured area";
  area.appendChild(polygon);
  drawGrid(v);
  drawScale(v);
  const now = state.now();
  state.waves = state.waves.filter((w) => now - w.at < WAVE_MS);
  keyed("waves", state.waves.filter((w) => inView(w.lat, w.lng)), (w) => w.id,
    () => el("circle", { class: "wave" }),
    (node, w) => {
      const [x, y] = v.at(w.lat, w.lng);
      node.setAttribute("cx", x);
      node.setAttribute("cy", y);
      node.setAttribute("r", Math.max(3, w.radius / v.metresPerPixel));
      node.setAttribute("data-job", w.job);
    });
  state.lines = state.lines.filter((l) => now - l.at < LINE_MS);
  keyed("lines", state.lines, (l) => l.id, () => el("line", { class: "winner" }), (node, l) => {
    const [x1, y1] = v.at(l.from.lat, l.from.lng);
    const [x2, y2] = v.at(l.to.lat, l.to.lng);
    Object.entries({ x1, y1, x2, y2 }).forEach(([k, val]) => node.setAttribute(k, val));
    node.setAttribute("data-job", l.job);
  });
  const workers = [...state.workers.values()].filter((w) => inView(w.lat, w.lng));
  keyed("workers", workers, (w) => w.id,
    (w) => {
      const dot = el("circle", { r: 3 });
      dot.appendChild(el("title"));
      return dot;
    },
    (node, w) => {
      const [x, y] = v.at(w.lat, w.lng);
      node.setAttribute("cx", x);
      node.setAttribute("cy", y);
      node.setAttribute("class", `worker-dot ${w.busy ? "busy" : "idle"}`);
      node.setAttribute("data-worker", w.id);
      node.firstChild.textContent = `${w.id}: ${w.busy ? "busy" : "idle"}`;
    });
  const jobs = [...state.jobs.values()].filter((j) => inView(j.location.lat, j.location.lng));
  keyed("jobs", jobs, (j) => j.id,
    () => {
      const g = el("g");
      g.append(el("rect", { width: 12, height: 12, x: -6, y: -6, rx: 2 }), el("text"), el("title"));
      return g;
    },
    (node, j) => {
      const [x, y] = v.at(j.location.lat, j.location.lng);
      node.setAttribute("transform", `translate(${x},${y})`);
      node.setAttribute("class", `job-marker ${j.status}`);
      node.setAttribute("data-job", j.id);
      node.setAttribute("data-status", j.status);
      node.querySelector("text").textContent = LETTER[j.status] || "?";
      node.querySelector("title").textContent = `job ${j.id}: ${j.status.replace("_", " ")}`;
    });
}

// -- the lists ----------------------------------------------------------------------------

function clockText(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, "0");
  return h ? `${h}h${String(m).padStart(2, "0")}` : `${m}:${rest}`;
}

function seconds(a, b) {
  return ((a - b) / 1000) * state.scale;
}

function list(id, items, text, late = () => false) {
  const ol = $(id);
  ol.replaceChildren(...items.map((item) => {
    const li = document.createElement("li");
    li.tabIndex = 0;
    li.textContent = text(item);
    li.dataset.key = item.id;
    if (late(item)) li.classList.add("late");
    return li;
  }));
}

function renderLists() {
  const now = state.now();
  const jobs = [...state.jobs.values()];
  const open = jobs.filter((j) => j.status === "open")
    .sort((a, b) => a.created_at.localeCompare(b.created_at));
  list("open-jobs", open.slice(0, 100), (j) =>
    `${j.id} · waiting ${clockText(seconds(now, Date.parse(j.created_at)))} · ${j.skills.join(", ") || "any skill"}` +
    (j.assignment === "business_choice"
      ? ` · business chooses · ${(state.applicants.get(j.id) || new Map()).size} applied`
      : ""));
  const held = jobs.filter((j) => j.status === "assigned" && j.lease_expires_at)
    .sort((a, b) => a.lease_expires_at.localeCompare(b.lease_expires_at));
  const left = (j) => seconds(Date.parse(j.lease_expires_at), now);
  list("leases", held.slice(0, 100),
    (j) => `${j.id} · ${j.assignee_id} · ${left(j) > 0 ? `${clockText(left(j))} left` : "ran out"}`,
    (j) => left(j) < 60);
  list("events", state.events.slice(0, 100), (e) =>
    `${e.occurred_at.slice(11, 19)} ${e.type} ${e.job_id} v${e.version}` +
    (e.type === "offer.created"
      ? ` → ${e.data.worker_id} (wave ${e.data.wave}${whyText(e.data.why)})` : ` · ${e.actor}`));
  renderSummary(jobs);
}

// Why the worker was offered the job (offer.created's `why`): their rank and what ranked them.
function whyText(why) {
  if (!why) return "";
  const rank = `, #${why.rank}${why.supply ? ` of ${why.supply}` : ""}, ${Math.round(why.distance_m)} m`;
  if (why.policy !== "likely") return `${rank}, nearest first`;
  return `${rank}, ${why.accepts} yes / ${why.declines} no / ${why.silences} silent` +
    `, chance ${why.chance.toFixed(2)}`;
}

function renderSummary(jobs) {
  const tiles = [];
  const counts = state.mode === "live" && state.summary
    ? state.summary.jobs_by_status
    : jobs.reduce((c, j) => ({ ...c, [j.status]: (c[j.status] || 0) + 1 }), {});
  // Finished jobs count for an hour after they finish (GET /ops/summary, the map's boxes).
  for (const status of [...LIVE, "completed", "expired"]) {
    const label = status.replace("_", " ") + (LIVE.includes(status) ? "" : " (last hour)");
    tiles.push([label, counts[status] || 0]);
  }
  if (state.mode === "live" && state.summary) {
    const s = state.summary;
    const p = s.time_to_accept_last_hour_s;
    tiles.push(["filled (last hour)", s.filled_last_hour]);
    tiles.push(["unfilled (last hour)", s.unfilled_last_hour]);
    tiles.push(["time to accept p50 / p90", p.p50 == null ? "—" : `${clockText(p.p50)} / ${clockText(p.p90)}`]);
    tiles.push(["leases ending in 5 min", s.leases_expiring_in_5_minutes]);
    tiles.push(["relay lag", `${Math.round(s.relay_lag_s)} s`]);
  } else {
    tiles.push(["workers on the map", state.workers.size]);
  }
  $("summary").replaceChildren(...tiles.map(([label, value]) => {
    const div = document.createElement("div");
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = label;
    dd.textContent = value;
    div.append(dt, dd);
    return div;
  }));
}

// -- what happens -------------------------------------------------------------------------

// A business_choice job's applicants, counted from the events (the list itself is read from
// GET /jobs/{id}/applications when a person picks the job).
function applied(event) {
  const of = state.applicants.get(event.job_id) || new Map();
  if (event.type === "application.created") of.set(event.data.worker_id, event.data);
  else of.delete(event.data.worker_id); // withdrawn, or the chosen worker left
  state.applicants.set(event.job_id, of);
  if (state.chosen === event.job_id) showApplicants(event.job_id);
}

async function showApplicants(jobId) {
  state.chosen = jobId;
  const section = $("applicants-panel");
  section.hidden = false;
  $("applicants-job").textContent = jobId;
  let applications = [];
  try {
    ({ applications } = await api(`/jobs/${jobId}/applications`));
  } catch (error) {
    if (state.mode === "live") throw error;
    applications = [...(state.applicants.get(jobId) || new Map()).values()]; // a replay: what the events said
  }
  const km = (m) => (m == null ? "distance unknown" : `${(m / 1000).toFixed(1)} km`);
  list("applicants", applications.map((a) => ({ ...a, id: a.worker_id })), (a) =>
    a.completed_jobs === undefined
      ? `${a.worker_id} · applied ${a.applied_at.slice(11, 19)}`
      : `${a.worker_id} · rating ${a.rating ?? "none yet"} · ${km(a.distance_m)} · ` +
        `${a.completed_jobs} done, ${a.released} given back, ${a.vanished} vanished` +
        (a.busy ? " · busy" : "") + (a.qualified ? "" : " · not qualified") +
        (a.assigned ? " · assigned" : ""));
  if (!applications.length) $("applicants").replaceChildren(Object.assign(document.createElement("li"), { textContent: "nobody yet" }));
}

function apply(event) {
  if (event.id) {
    if (state.seen.has(event.id)) return; // heard over the socket and pulled too: once
    state.seen.add(event.id);
    if (state.seen.size > 5000) state.seen.delete(state.seen.values().next().value);
  }
  state.events.unshift(event);
  state.events.length = Math.min(state.events.length, 200);
  const when = state.now();
  if (event.type.startsWith("application.")) return applied(event);
  if (event.type === "job.back_to_choice") {
    return applied({ ...event, type: "application.withdrawn" });
  }
  if (event.type === "offer.created") {
    const at = event.data.job.location;
    state.waves.push({ id: `${event.job_id}:${event.version}:${event.data.wave}`, job: event.job_id,
      lat: at.lat, lng: at.lng, radius: event.data.radius_m, at: when });
    return;
  }
  if (event.type === "job.unfilled") return;
  const job = event.data;
  if (!state.jobs.has(job.id) || state.jobs.get(job.id).version <= job.version) {
    state.jobs.set(job.id, job);
  }
  if (event.type === "job.assigned") {
    const winner = state.workers.get(job.assignee_id);
    if (winner) {
      state.lines.push({ id: `${job.id}:${job.version}`, job: job.id, from: winner, to: job.location, at: when });
      winner.busy = true;
    }
  }
}

function bboxParam() {
  return state.bbox.map((n) => n.toFixed(5)).join(",");
}

async function pollEvents() {
  if (state.pushing) return; // the socket brings them; polling is the fallback only
  const page = await api(`/ops/events?limit=200${state.cursor ? `&after=${state.cursor}` : ""}`);
  page.events.forEach(apply);
  state.cursor = page.cursor;
}

async function pollJobs() {
  const { jobs } = await api(`/ops/jobs?bbox=${bboxParam()}&status=${LIVE.join(",")}`);
  const fresh = new Map(jobs.map((j) => [j.id, j]));
  for (const [id, job] of state.jobs) {
    if (LIVE.includes(job.status) && !fresh.has(id) && inView(job.location.lat, job.location.lng)) {
      state.jobs.delete(id); // it moved on (and its event will say how)
    }
  }
  for (const job of jobs) {
    const known = state.jobs.get(job.id);
    if (!known || known.version <= job.version) state.jobs.set(job.id, job);
  }
}

async function pollWorkers() {
  const { workers } = await api(`/ops/workers?bbox=${bboxParam()}`);
  state.workers = new Map(workers.map((w) => [w.id, { id: w.id, ...w.location, busy: w.busy }]));
}

async function pollSummary() {
  state.summary = await api("/ops/summary");
  if (!state.socket) listen(); // an ops token, proven: now listen
}

// -- push: the WebSocket -------------------------------------------------------------------

function pushState(text) {
  $("push").textContent = text;
}

function listen(retry = 1000) {
  if (state.mode !== "live" || !state.token) return;
  const base = state.pushUrl || `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  const socket = new WebSocket(`${base}?token=${encodeURIComponent(state.token)}`);
  state.socket = socket;
  socket.onopen = async () => {
    retry = 1000;
    try {
      await pollEvents(); // what happened while it was down (ids keep the overlap apart)
    } catch (error) { /* the next fallback poll or push brings it */ }
    state.pushing = true;
    pushState("Listening: changes arrive over the push socket.");
  };
  socket.onmessage = (message) => apply(JSON.parse(message.data));
  socket.onclose = (closed) => {
    state.pushing = false;
    if (state.socket !== socket || state.mode !== "live") return;
    const why = closed.code === 1013 ? "it fell behind" : closed.code === 1008 ? "the sign-in ended" : "it is down";
    pushState(`Push socket closed (${why}): polling every second until it reconnects.`);
    state.timers.push(setTimeout(() => listen(Math.min(retry * 2, 10000)), retry));
  };
}

function stopListening() {
  const socket = state.socket;
  state.socket = null;
  state.pushing = false;
  if (socket) socket.close();
}

function every(ms, work) {
  let stopped = false;
  const run = async () => {
    if (stopped || state.mode !== "live") return;
    try {
      await work();
    } catch (error) {
      if (error instanceof Refused) {
        stopAll();
        state.jobs.clear();
        state.workers.clear();
        state.events = [];
        notice("This console needs an ops sign-in: the token is missing, expired, or not an ops token.");
        $("mode").textContent = "Not signed in";
        render();
        renderLists();
        return;
      }
      $("mode").textContent = `Live (retrying: ${error.message})`;
    }
    state.timers.push(setTimeout(run, ms));
  };
  state.timers.push(setTimeout(run, 0));
  return () => { stopped = true; };
}

function stopAll() {
  state.timers.forEach(clearTimeout);
  state.timers = [];
  stopListening();
  pushState("");
}

async function live(config) {
  state.mode = "live";
  state.now = () => Date.now();
  state.scale = 1;
  if (!state.token) {
    const where = config.signin_url ? "Sign in" : "Run .venv/bin/dispatch console for a link that signs you in.";
    notice(`This console needs an ops sign-in. ${where}`);
    if (config.signin_url) {
      const button = document.createElement("button");
      button.type = "button";
      button.id = "sign-in";
      button.textContent = "Sign in with your ops account";
      button.onclick = () => signIn(config.signin_url);
      $("notice").append(" ", button);
    }
    $("mode").textContent = "Not signed in";
    render();
    return;
  }
  notice("");
  $("mode").textContent = "Live";
  pushState("Connecting the push socket: polling meanwhile.");
  every(1000, pollEvents); // the fallback: does nothing while the socket is open
  every(2000, pollJobs);
  every(1500, pollWorkers);
  every(5000, pollSummary);
}

// -- replaying a simulation ---------------------------------------------------------------

function replay(text) {
  stopAll();
  const lines = text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
  const head = lines.shift();
  if (!head || head.type !== "replay") {
    notice("That file is not a simulation replay (its first line names the run).");
    return;
  }
  state.mode = "replay";
  state.seen.clear();
  state.jobs.clear();
  state.workers.clear();
  state.events = [];
  state.waves = [];
  state.lines = [];
  state.border = head.border;
  const lats = head.border.map((p) => p[0]);
  const lngs = head.border.map((p) => p[1]);
  state.bbox = [Math.min(...lngs), Math.min(...lats), Math.max(...lngs), Math.max(...lats)];
  state.area = [...state.bbox];
  state.scale = head.speed || 1;
  const epoch0 = (head.epoch0 || 0) * 1000;
  let t = lines.length ? lines[0].t : 0;
  let next = 0;
  let paused = false;
  let last = performance.now();
  // Times in the events are the product's (its clock ran `speed` times slower than the city's).
  state.now = () => epoch0 + (t / state.scale) * 1000;
  notice("");
  const button = $("replay-pause");
  button.disabled = false;
  button.textContent = "Pause";
  button.onclick = () => {
    paused = !paused;
    button.textContent = paused ? "Play" : "Pause";
  };
  const tick = () => {
    if (state.mode !== "replay") return;
    const wall = performance.now();
    if (!paused) t += ((wall - last) / 1000) * Number($("replay-speed").value);
    last = wall;
    while (next < lines.length && lines[next].t <= t) {
      const item = lines[next++];
      if (item.type === "positions") {
        state.workers = new Map(item.workers.map(([id, lat, lng, status]) =>
          [id, { id, lat, lng, busy: status === "assigned" || status === "working" }]));
      } else {
        apply(item);
      }
    }
    $("mode").textContent = `Replay of ${head.scenario} (${head.dispatch}): ${clockText(t)} of ${clockText(head.seconds)}`;
    if (next >= lines.length) $("mode").textContent += " (ended)";
    state.timers.push(setTimeout(tick, 250));
  };
  tick();
}

// -- starting -----------------------------------------------------------------------------

function zoom(factor) {
  const [minLng, minLat, maxLng, maxLat] = state.bbox;
  const cx = (minLng + maxLng) / 2;
  const cy = (minLat + maxLat) / 2;
  const w = Math.min(2, ((maxLng - minLng) / 2) * factor);
  const h = Math.min(2, ((maxLat - minLat) / 2) * factor);
  state.bbox = [cx - w, cy - h, cx + w, cy + h];
  render();
}

function pan(dx, dy) {
  const [minLng, minLat, maxLng, maxLat] = state.bbox;
  const w = (maxLng - minLng) * dx * 0.2;
  const h = (maxLat - minLat) * dy * 0.2;
  state.bbox = [minLng + w, minLat + h, maxLng + w, maxLat + h];
  render();
}

async function start() {
  const config = await (await fetch("/console/config.json")).json();
  state.token = takeToken() || (await redeemCode(config.signin_url));
  const fromUrl = new URLSearchParams(location.search).get("bbox");
  state.bbox = (fromUrl || config.bbox).split(",").map(Number);
  state.area = [...state.bbox];
  state.tiles = config.tiles || null;
  state.pushUrl = config.push_url || null;
  $("zoom-in").onclick = () => zoom(0.7);
  $("zoom-out").onclick = () => zoom(1.4);
  $("map").addEventListener("keydown", (e) => {
    const moves = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
    if (moves[e.key]) pan(...moves[e.key]);
    else if (e.key === "+" || e.key === "=") zoom(0.7);
    else if (e.key === "-") zoom(1.4);
    else return;
    e.preventDefault();
  });
  const pick = (e) => {
    const key = e.target.closest("li")?.dataset.key;
    const job = key && state.jobs.get(key);
    if (job && job.assignment === "business_choice") showApplicants(key).catch(() => {});
  };
  $("open-jobs").addEventListener("click", pick);
  $("open-jobs").addEventListener("keydown", (e) => { if (e.key === "Enter") pick(e); });
  $("replay-file").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (file) replay(await file.text());
  });
  window.addEventListener("resize", render);
  setInterval(() => { render(); renderLists(); }, 500);
  await live(config);
}

start();
