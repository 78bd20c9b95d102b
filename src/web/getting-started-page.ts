/**
 * "Getting started": the first call in curl, TypeScript and Python, how to read `confirmed`,
 * `defense` and `arming`, skipping `ok:false` entries, logging `credits_left`, and polling once
 * per candle close. Linked from the landing page, the account page and the API docs. The
 * examples name this server's own address. Pure rendering.
 */
import type { PageContext } from "./auth-pages.ts";
import { html, layout } from "./html.ts";

/** The examples' request: the default coins' first two on the API's default timeframe. */
const QUERY = "symbols=BTC,ETH&tf=4h";

/** The curl line of a first call to `baseUrl` with `apiKey` (the new key page shows it with the real key). */
export function curlLine(baseUrl: string, apiKey: string): string {
  return `curl -s -H 'x-api-key: ${apiKey}' '${baseUrl}/api/v1/signals?${QUERY}'`;
}

function typescriptExample(baseUrl: string): string {
  return `// Node 18+ or a browser-free runtime: fetch is built in. Run with SIGNALS_KEY set.
const TF_MS = 4 * 3600_000; // the 4h timeframe

async function poll(): Promise<void> {
  const res = await fetch("${baseUrl}/api/v1/signals?${QUERY}", {
    headers: { "x-api-key": process.env.SIGNALS_KEY! },
  });
  const body = await res.json();
  if (!body.ok) {
    console.error(res.status, body.error, body.message); // e.g. 402 insufficient_credits
    return;
  }
  console.log("credits_left", body.credits_left);
  for (const s of body.signals) {
    if (!s.ok) continue; // unknown_symbol, no_data, stale: skip it, it is not NONE
    console.log(s.symbol, s.signal, s.confirmed ? "confirmed" : "forming", "defense", s.defense, "arming", s.arming);
  }
}

// Once per candle close (a few seconds after it), not in a tight loop.
async function loop(): Promise<never> {
  for (;;) {
    await poll();
    const nextClose = Math.ceil(Date.now() / TF_MS) * TF_MS;
    await new Promise((r) => setTimeout(r, nextClose - Date.now() + 5_000));
  }
}
loop();`;
}

function pythonExample(baseUrl: string): string {
  return `# Python 3, standard library only. Run with SIGNALS_KEY set.
import json, os, time, urllib.error, urllib.request

TF_SECONDS = 4 * 3600  # the 4h timeframe

def poll():
    req = urllib.request.Request("${baseUrl}/api/v1/signals?${QUERY}",
                                 headers={"x-api-key": os.environ["SIGNALS_KEY"]})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            body = json.load(res)
    except urllib.error.HTTPError as err:
        error = json.load(err)
        print(err.code, error["error"], error["message"])  # e.g. 402 insufficient_credits
        return
    print("credits_left", body["credits_left"])
    for s in body["signals"]:
        if not s["ok"]:
            continue  # unknown_symbol, no_data, stale: skip it, it is not NONE
        print(s["symbol"], s["signal"], "confirmed" if s["confirmed"] else "forming",
              "defense", s["defense"], "arming", s["arming"])

while True:  # once per candle close (a few seconds after it)
    poll()
    next_close = (int(time.time()) // TF_SECONDS + 1) * TF_SECONDS
    time.sleep(next_close - time.time() + 5)`;
}

/** The getting-started page; `baseUrl` is this server's public address. */
export function renderGettingStartedPage(ctx: PageContext, baseUrl: string): string {
  return layout(
    { title: "Getting started", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn, current: "getting-started" },
    html`<h1>Getting started</h1>
<p class="lead">From a key to a program that reads signals once per candle close, in five minutes.</p>
<ol class="steps">
  <li>${
    ctx.signedIn
      ? html`On <a href="/account">your account page</a>`
      : html`<a href="/signup">Create an \
account</a>, confirm your email address if we mail you a link, then on your account \
page`
  }, choose a plan and create your API key. It is shown once: copy it.</li>
  <li>Make the first call below. Each successful call uses 1 Token, however many coins it asks for.</li>
  <li>Read each coin's entry as described under “Reading an answer”, and ask again at the next candle close.</li>
</ol>
<section aria-labelledby="curl-h">
  <h2 id="curl-h">The first call: curl</h2>
  <pre class="code wrap" tabindex="0"><code>${curlLine(baseUrl, "YOUR_KEY")}</code></pre>
</section>
<section aria-labelledby="ts-h">
  <h2 id="ts-h">TypeScript</h2>
  <pre class="code" tabindex="0"><code>${typescriptExample(baseUrl)}</code></pre>
</section>
<section aria-labelledby="py-h">
  <h2 id="py-h">Python</h2>
  <pre class="code" tabindex="0"><code>${pythonExample(baseUrl)}</code></pre>
</section>
<section aria-labelledby="read-h">
  <h2 id="read-h">Reading an answer</h2>
  <dl class="glossary">
    <dt><code>signal</code></dt><dd><code>STRONG_LONG</code> or <code>LONG</code> (price closed above the last swing \
high; strong when the trend was already up), <code>SHORT</code> / <code>STRONG_SHORT</code> mirrored, \
<code>NONE</code> when the last signal was invalidated.</dd>
    <dt><code>confirmed</code></dt><dd><code>true</code>: the signal stands at the last closed candle and will not \
change before the next close. <code>false</code>: the candle still forming would change it if it closed now; treat it \
as a warning, not a signal.</dd>
    <dt><code>defense</code></dt><dd>The level a close beyond would invalidate the signal (below it for a long, above \
it for a short); <code>null</code> with <code>NONE</code>.</dd>
    <dt><code>arming</code></dt><dd>A setup that is forming: <code>dir</code> 1 (long) or -1 (short), \
<code>trigger</code> (the close that would fire it), <code>invalidation</code> and a <code>score</code> from 0 to 10 \
(near, with the trend, tight risk). <code>null</code> when nothing is forming.</dd>
    <dt><code>atr_pct</code></dt><dd>The average true range (14 candles) as a percentage of the price: how far the \
coin usually moves in one candle.</dd>
    <dt><code>ok: false</code></dt><dd>An entry with <code>ok:false</code> has a <code>reason</code> \
(<code>unknown_symbol</code>, <code>invalid_symbol</code>, <code>no_data</code>, <code>stale</code>) and nothing else. \
Skip it: it is not <code>NONE</code>, and the other coins of the call are still good.</dd>
    <dt><code>credits_left</code></dt><dd>Your Tokens after this call. Log it: it is the cheapest way to see a program \
that polls too often before it runs dry.</dd>
  </dl>
</section>
<section aria-labelledby="poll-h">
  <h2 id="poll-h">Poll once per candle close</h2>
  <p>Signals are confirmed at candle closes (UTC boundaries: 4h closes at 00:00, 04:00, … UTC). Ask a few seconds \
after each close of your timeframe. Asking more often returns the same confirmed answer and only burns Tokens; the \
<a href="/watch">watchlist</a> and Telegram alerts tell you about changes without any call. See \
<a href="/pricing#billing-h">how billing works</a>.</p>
</section>
<p>The full reference of every field, error and endpoint is in the <a href="/docs">API docs</a>.</p>`,
  );
}
