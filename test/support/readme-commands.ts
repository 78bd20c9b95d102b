/**
 * Every shell command of the README, as printed, and how the test runs it: the README's ```sh
 * blocks parsed into commands (continuation lines and here-documents kept whole, comment lines
 * left out), the scenario that runs each one in an order a newcomer could follow (servers in
 * the background, stopped as with Ctrl-C before the next one starts; commands that do not depend
 * on each other's effects at the same time), what each must print or exit with, and the short,
 * justified list of commands that cannot run here (the internet, the Stripe CLI, the suite itself).
 * test/e2e/readme-commands.test.ts requires that the two lists together are exactly the README's
 * commands, so a new command cannot go untested unnoticed.
 */

/** The commands of the ```sh blocks of a Markdown text, each exactly as printed. */
export function readmeShellCommands(markdown: string): string[] {
  const commands: string[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(?:sh|bash|shell)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(indent));
    for (let j = 0; j < body.length; j++) {
      const line = body[j]!;
      if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
      const parts = [line];
      while (parts.at(-1)!.endsWith("\\") && j + 1 < body.length) parts.push(body[++j]!);
      const heredoc = /<<-?\s*['"]?(\w+)['"]?/.exec(line);
      if (heredoc) while (j + 1 < body.length && parts.at(-1) !== heredoc[1]) parts.push(body[++j]!);
      commands.push(parts.join("\n"));
    }
  }
  return commands;
}

/** What a finished command must have done. */
export interface Expectation {
  /** Exit code (default 0). */
  readonly code?: number;
  /** Patterns its standard output must match. */
  readonly stdout?: readonly RegExp[];
}

/** One step of the scenario. */
export type Step =
  /** A README command run to its end (in the shell state the earlier commands left: `export KEY=…`). */
  | { readonly run: string; readonly expect?: Expectation; readonly input?: string }
  /**
   * A README command that keeps running (a server, a feeder, a stream), ready when its output says so or a URL
   * answers.
   */
  | { readonly start: string; readonly name: string; readonly readyOutput?: RegExp; readonly readyUrl?: string }
  /** Stops a started command as Ctrl-C would (SIGINT to its process group) and waits for it to end. */
  | { readonly stop: string }
  /** The test writes the file an excluded command would have fetched (see EXCLUDED). */
  | { readonly standIn: "binance-monthly-zip"; readonly file: string }
  /**
   * Lanes run at the same time, each lane's steps in order, the next step once every lane is done. A newcomer
   * types these commands one after another; they go together here because none depends on another lane's effects
   * (the expected outputs say what each lane's order must be), which spares the test a minute of waiting.
   */
  | { readonly together: readonly (readonly Step[])[] };

/** Answers while a server of the scenario runs (its internal listener). */
export const SERVER_READY = "http://127.0.0.1:8081/healthz";

/** The README's commands in the order the test runs them, with what each must show. */
export const SCENARIO: readonly Step[] = [
  // Start it, and the examples against the demo feed.
  { start: "npm install && npm start", name: "npm start", readyOutput: /Try it:/, readyUrl: SERVER_READY },
  { run: "export KEY=$(npx signals account create --email you@example.com --plan node --field api_key)" },
  {
    together: [
      // The paid calls, in the README's order (each answer shows the Tokens left after it).
      [
        {
          run: `curl -s -H "x-api-key: $KEY" 'http://127.0.0.1:8080/api/v1/signals?symbols=BTC,ETH&tf=1h'`,
          expect: {
            stdout: [
              /^\{"ok":true,"tf":"1h","ts":\d+,"signals":\[\{"symbol":"BTC","tf":"1h","ok":true,"price":/,
              /"credits_left":9999\}$/,
            ],
          },
        },
        {
          run:
            `curl -s -H "x-api-key: $KEY" -H 'content-type: application/json' ` +
            `\\\n  -d '{"symbols":"BTC,ETH","tf":"1h"}' ` +
            `\\\n  http://127.0.0.1:8080/signals.v1.SignalsService/GetSignals`,
          expect: { stdout: [/^\{"ok":true,"tf":"1h",/, /"creditsLeft":"9998"/] },
        },
        {
          run:
            `npx buf curl --protocol grpc --http2-prior-knowledge \\\n  -H "x-api-key: $KEY" -d ` +
            `'{"symbols":"BTC,ETH","tf":"1h"}' \\\n  http://127.0.0.1:8080/signals.v1.SignalsService/GetSignals`,
          expect: { stdout: [/"creditsLeft": "9997"/, /"symbol": "ETH"/] },
        },
        {
          run:
            `curl -s -H "x-api-key: $KEY" -H 'Idempotency-Key: 7f9c2d1e-run-42' ` +
            `\\\n  'http://127.0.0.1:8080/api/v1/signals?symbols=BTC,ETH&tf=1h'`,
          expect: { stdout: [/^\{"ok":true,"tf":"1h"/, /"credits_left":9996\}$/] },
        },
        {
          run: `curl -s -H "x-api-key: $KEY" http://127.0.0.1:8080/api/v1/usage`,
          expect: { stdout: [/^\{"ok":true,"ts":\d+,"plan":"node",/, /"credits_left":9996,/, /"calls_today":4,/] },
        },
      ],
      // The free endpoints and the health check, which charge nothing.
      [
        {
          run: "npx buf curl --protocol grpc --http2-prior-knowledge --list-methods http://127.0.0.1:8080",
          expect: { stdout: [/^signals\.v1\.SignalsService\/GetSignals$/m, /^signals\.v1\.UsageService\/GetUsage$/m] },
        },
        {
          run: `curl -s -H "x-api-key: $KEY" 'http://127.0.0.1:8080/api/v1/movers?tf=1h&limit=3'`,
          expect: { stdout: [/^\{"ok":true,"tf":"1h","ts":\d+,"gainers":\[/] },
        },
        {
          run: `curl -s -H "x-api-key: $KEY" 'http://127.0.0.1:8080/api/v1/derivatives?symbols=BTC,ETH'`,
          expect: { stdout: [/^\{"ok":true,"ts":\d+,"rows":\[\{"symbol":"BTC","venue":"DEMO-A \(sample data\)"/] },
        },
        {
          run: `curl -s -H "x-api-key: $KEY" 'http://127.0.0.1:8080/api/v1/news?symbols=BTC&limit=2'`,
          expect: { stdout: [/^\{"ok":true,"ts":\d+,"items":\[\{"id":"demo-news-/] },
        },
      ],
      [
        {
          run:
            `curl -s -H "x-api-key: $KEY" ` +
            `'http://127.0.0.1:8080/api/v1/macro?series=DEMO%20CPI%20YoY%20(sample)&limit=3'`,
          expect: { stdout: [/^\{"ok":true,"ts":\d+,"points":\[\{"series":"DEMO CPI YoY \(sample\)"/] },
        },
        {
          run: `curl -s -H "x-api-key: $KEY" 'http://127.0.0.1:8080/api/v1/fundamentals?symbols=BTC,ETH'`,
          expect: { stdout: [/^\{"ok":true,"ts":\d+,"rows":\[\{"symbol":"BTC",/] },
        },
        {
          run:
            `npx buf curl --protocol grpc --http2-prior-knowledge \\\n  -H "x-api-key: $KEY" -d ` +
            `'{"symbols":"BTC","limit":"2"}' \\\n  http://127.0.0.1:8080/signals.v1.MarketDataService/GetNews`,
          expect: { stdout: [/"items": \[/] },
        },
        {
          run:
            `npx buf curl --protocol grpc --http2-prior-knowledge -d '{}' ` +
            `\\\n  http://127.0.0.1:8080/grpc.health.v1.Health/Check`,
          expect: { stdout: [/"status": "SERVING"/] },
        },
      ],
      // Candles from Binance's archive (the download stood in for), imported twice.
      [
        { standIn: "binance-monthly-zip", file: "ADAUSDT-1h-2024-05.zip" },
        { run: "gzip -dc ADAUSDT-1h-2024-05.zip > ADAUSDT-1h-2024-05.csv" },
        {
          run: "npx signals candles import --file ADAUSDT-1h-2024-05.csv --symbol ADA --tf 1h",
          expect: { stdout: [/^ADA 1h: accepted 744, rejected 0, duplicates 0$/m] },
        },
        {
          run:
            `npx signals candles import --file ADAUSDT-1h-2024-05.csv ` +
            `--symbol ADA --tf 1h   # a file made as in "Candles in"`,
          expect: { stdout: [/^ADA 1h: accepted 0, rejected 0, duplicates 744$/m] },
        },
      ],
      // The operator CLI's list, in lanes: the commands of a lane share state (the second import, account 1's
      // Tokens, its alerts, its password), those of different lanes do not.
      [
        {
          run: "npx signals account create --email ana@example.com --plan node --json   # prints api_key once",
          expect: {
            stdout: [
              /^\{"account_id":3,"email":"ana@example.com","plan":"node",.*"api_key":"sig_live_[0-9A-Za-z]{36}"\}$/,
            ],
          },
        },
        {
          run: "npx signals account show --account 1 --json",
          expect: { stdout: [/^\{"account_id":1,"email":"demo@localhost","plan":"node",/] },
        },
        {
          run: "npx signals key regenerate --account 1          # new key printed once; the old one stops at once",
          expect: { stdout: [/^API key \(shown once, store it now\): sig_live_[0-9A-Za-z]{36}$/m] },
        },
        {
          run: "npx signals subscription set --account 1 --until 2027-12-31T23:59:59+08:00",
          expect: { stdout: [/subscription until 2027-12-31T15:59:59\.000Z/] },
        },
      ],
      [
        { run: "npx signals tokens pack --account 1 --amount 5000", expect: { stdout: [/packs 5000\)/] } },
        {
          run: `npx signals tokens adjust --account 1 --delta -20 --reason "refund of duplicate calls"`,
          expect: { stdout: [/^Tokens: 14980 /m] },
        },
        {
          run: "npx signals payments list --account 1 --json   # what Stripe reported, with Stripe ids and ledger rows",
          expect: { stdout: [/^\{"account_id":1,.*"payments":\[\]\}$/] },
        },
        {
          run:
            "npx signals migrate                             # through the running " +
            "server, which migrated at its start",
          expect: { stdout: [/^migrations applied: (\d+) of \1$/m] },
        },
      ],
      [
        {
          run: "npx signals alerts set --account 1 --chat 123456789 --symbols BTC,ETH --tf 4h,1d",
          expect: { stdout: [/^alerts: chat 123456789 {2}coins BTC,ETH {2}timeframes 4h,1d$/m] },
        },
        { run: "npx signals alerts clear --account 1", expect: { stdout: [/^alerts: off$/m] } },
        {
          run: "echo 'a long web password' | npx signals account password --account 1   # web sign-in password",
          expect: { stdout: [/^Web password set; \d+ web session\(s\) signed out\.$/m] },
        },
        {
          run: "npx signals account password --account 1 --link   # or a one-time setup link for the member",
          expect: { stdout: [/^ {2}http:\/\/127\.0\.0\.1:8080\/setup-password\?token=[A-Za-z0-9_-]{43}$/m] },
        },
      ],
    ],
  },
  // Free data in, imported twice (the second time all duplicates): after the free endpoints' lane, since the
  // first real news replaces the demo news that lane's news call shows.
  {
    run:
      `cat > news.jsonl <<'JSONL'\n{"id":"wire-0001","time":"2026-11-15T04:00:00Z","title":"Example ` +
      `headline","source":"Example Wire","url":"https://example.com/0001","coins":["BTC"]}\nJSONL`,
  },
  {
    run: "npx signals data import --dataset news --file news.jsonl",
    expect: { stdout: [/^news: accepted 1, rejected 0, duplicates 0$/m] },
  },
  {
    run: "npx signals data import --dataset news --file news.jsonl   # free endpoints' data, see below",
    expect: { stdout: [/^news: accepted 0, rejected 0, duplicates 1$/m] },
  },
  // Alone: a command that read the old token while it changes would be refused.
  {
    run:
      "npx signals token rotate                        # new internal " +
      "token; the running server switches to it at once",
    expect: { stdout: [/^new internal token written to .*\.data\/internal-token \(0600\)$/m] },
  },
  // The doctor, the event stream and the web passwords, still on the demo server, with the new token.
  {
    together: [
      [
        {
          run: "npx signals doctor                              # is everything ready to sell? exits 1 until it is",
          expect: {
            code: 1,
            stdout: [
              /^ok +server +answers on 127\.0\.0\.1:8081/m,
              /^failing demo feed /m,
              /^not ready to sell: demo feed, public address, stripe key, stripe webhook secret$/m,
            ],
          },
        },
      ],
      [
        {
          start:
            `npx buf curl --protocol grpc --http2-prior-knowledge --reflect-header '*' \\\n ` +
            ` -H "authorization: Bearer $(cat .data/internal-token)" -d '{"from_start":true}' ` +
            `\\\n  http://127.0.0.1:8081/signals.v1.SignalEventsService/StreamSignalEvents`,
          name: "event stream",
          readyOutput: /"id": "[A-Z0-9]+-(15m|30m|1h|4h|1d)-\d+"/,
        },
        { stop: "event stream" },
      ],
      [
        {
          run: "npx signals account password --account 1          # prompts twice on a terminal",
          input: "another long password\n",
          expect: { stdout: [/^Web password set;/m] },
        },
        {
          run: "npx signals account password --account 1 --link   # prints {PUBLIC_BASE_URL}/setup-password?token=…",
          expect: { stdout: [/setup-password\?token=/] },
        },
      ],
    ],
  },
  { stop: "npm start" },
  // The same server by the CLI, not beside npm start.
  {
    start:
      "npx signals serve                               # same as " +
      "npm start (not beside it: one server per data directory)",
    name: "signals serve",
    readyUrl: SERVER_READY,
  },
  { stop: "signals serve" },
  // Alerts with a bot (the Bot API is a local fake reached through TELEGRAM_API_BASE).
  {
    start: "TELEGRAM_BOT_TOKEN=123456789:your-token-from-BotFather TELEGRAM_BOT_USERNAME=SignalsAlertsBot npm start",
    name: "telegram",
    readyUrl: SERVER_READY,
    readyOutput: /"msg":"listening"/,
  },
  {
    run: "npx signals alerts set --account 1 --chat 123456789 --symbols BTC,ETH --tf 1h,4h",
    expect: { stdout: [/^alerts: chat 123456789 {2}coins BTC,ETH {2}timeframes 1h,4h$/m] },
  },
  { stop: "telegram" },
  // Payments in test mode (Stripe's API is a local fake reached through STRIPE_API_BASE).
  {
    start:
      "STRIPE_SECRET_KEY=sk_test_YOUR_KEY STRIPE_WEBHOOK_SECRET=whsec_PRINTED_BY_STRIPE_LISTEN " +
      "STRIPE_PRICE_NODE=price_YOUR_NODE_PRICE npm start",
    name: "stripe",
    readyUrl: SERVER_READY,
  },
  {
    run: "npx signals payments list --account 2                         # what was recorded",
    expect: { stdout: [/^account 2 <you@example\.com>/m, /^no payments$/m] },
  },
  { stop: "stripe" },
  // Live market data (Binance is a local fake reached through FEED_REST_URL / FEED_WS_URL).
  { start: "DEMO_FEED=false npm start", name: "real server", readyUrl: SERVER_READY },
  { start: "npx signals feed --symbols BTC,ETH,SOL", name: "feeder", readyOutput: /"msg":"feeder started"/ },
  {
    run: "curl -s 127.0.0.1:9464/healthz     # the feeder's own health (its metrics are at /metrics)",
    expect: { stdout: [/^\{"ok":(true|false),"causes":\[/] },
  },
  { stop: "feeder" },
  { stop: "real server" },
];

/** README commands the test does not run, each with the reason. */
export const EXCLUDED: Readonly<Record<string, string>> = {
  "npm install && npm test":
    "the test suite itself: running it from inside one of its tests would recurse (CI runs it: .ci/run)",
  ["FEED_METRICS_PORT=9465 NEWS_FEEDS=https://www.coindesk.com/arc/outboundfeeds/rss/ " +
    "npx signals feed --datasets news,fundamentals,macro"]:
    "needs the internet (a publisher's RSS feed, CoinGecko, FRED) and the operator's own FRED key; " +
    "test/e2e/feeder-datasets.test.ts runs these datasets against local fakes of all three",
  ["curl -sSfO https://data.binance.vision/data/spot/monthly/klines/ADAUSDT/1h/ADAUSDT-1h-2024-05.zip   " +
    "# needs the internet"]:
    "needs the internet (Binance's public archive): the test writes a file of that " +
    "name and layout in its place (a one-file zip of May 2024's 744 hourly rows " +
    "in Binance's kline layout) and runs the next two lines on it as printed",
  "stripe login":
    "the Stripe CLI and a Stripe account, over the internet; the server side " +
    "of the payments flow runs against the local Stripe fake (test/payments/)",
  ['stripe prices create --currency usd --unit-amount 4900 -d "recurring[interval]=month" ' +
    '-d "product_data[name]=Node plan"']: "the Stripe CLI and a Stripe account, over the internet",
  "stripe listen --forward-to 127.0.0.1:8080/webhooks/stripe":
    "the Stripe CLI and a Stripe account, over the internet; signed webhooks are tested against " +
    "the server with the local fake (test/payments/webhook-packs.test.ts, subscriptions.test.ts)",
  "stripe trigger charge.refunded                                # other events on demand":
    "the Stripe CLI and a Stripe account, over the internet; refunds are " +
    "tested with signed fake events (test/payments/webhook-packs.test.ts)",
};

/** The steps of `steps` with those of their lanes, in order. */
export function flatSteps(steps: readonly Step[] = SCENARIO): Step[] {
  return steps.flatMap((step) => ("together" in step ? step.together.flatMap((lane) => flatSteps(lane)) : [step]));
}

/** The README commands the scenario runs. */
export function scenarioCommands(): string[] {
  return flatSteps().flatMap((step) => ("run" in step ? [step.run] : "start" in step ? [step.start] : []));
}
