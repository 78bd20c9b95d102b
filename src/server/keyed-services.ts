/**
 * The public port's API-keyed services (SignalsService, MarketDataService, UsageService), each
 * built once and wrapped once in the API-key guard. The router (Connect, gRPC, gRPC-Web) and
 * the REST mapping serve this one list, so no protocol reaches a method without the guard.
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { MarketDataService } from "../../gen/signals/v1/market_data_pb.js";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { UsageService } from "../../gen/signals/v1/usage_pb.js";
import { type ApiKeyGuardOptions, guardedByApiKey } from "../accounts/api-key-guard.ts";
import { FailedKeyThrottle } from "../accounts/failed-key-throttle.ts";
import type { KeyLastUsed } from "../accounts/key-last-used.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import type { SignalSnapshot } from "../market/snapshot.ts";
import { createMarketDataService } from "../market-data/service.ts";
import { createUsageService } from "../market-data/usage-service.ts";
import type { Metrics } from "../observability/metrics.ts";
import { createSignalsService } from "../signals/service.ts";

export interface KeyedServicesDeps {
  readonly config: Config;
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly snapshot: SignalSnapshot;
  readonly metrics: Metrics;
  readonly keyUse: KeyLastUsed;
}

/** A service and the guarded implementation every protocol serves. */
export interface KeyedService {
  readonly service: DescService;
  readonly impl: object;
}

/** Paid calls count in `calls`, free ones in `freeCalls` by method. */
function countOutcome(metrics: Metrics) {
  return (method: DescMethod, protocol: string, outcome: string) => {
    if (method.parent === SignalsService) metrics.calls.inc({ protocol, outcome });
    else metrics.freeCalls.inc({ method: method.name, protocol, outcome });
  };
}

/** Builds the keyed services behind one guard (one failed-key budget per address for all of them). */
export function createKeyedServices(deps: KeyedServicesDeps): KeyedService[] {
  const { config, metrics, keyUse } = deps;
  const throttle = new FailedKeyThrottle({
    limit: config.failedKeyLimit,
    windowMs: config.failedKeyWindowMs,
    clock: deps.clock,
    db: deps.db,
  });
  const guard: ApiKeyGuardOptions = {
    throttle,
    onAccepted: (keyHash, now) => {
      throttle.recordSuccess(keyHash);
      keyUse.touch(keyHash, now);
    },
    record: countOutcome(metrics),
  };
  // Charge statements in flight: leave connections free for everything else (see signals/service.ts).
  const maxChargesInFlight = Math.max(1, config.dbPoolSize - 2);
  const signals = createSignalsService({
    ...deps,
    limits: config.limits,
    metrics,
    maxChargesInFlight,
    chargeGroupWaitMs: config.chargeGroupWaitMs,
    chargeResolveMs: config.chargeResolveMs,
    catchUpMs: config.catchUpMs,
  });
  const marketData = createMarketDataService({
    ...deps,
    staleAfterMs: config.staleAfterMs,
    freeRateLimit: config.freeRateLimit,
  });
  const usage = createUsageService({ ...deps, limits: config.limits, freeRateLimit: config.freeRateLimit });
  return [
    { service: SignalsService, impl: guardedByApiKey(SignalsService, signals, guard) },
    { service: MarketDataService, impl: guardedByApiKey(MarketDataService, marketData, guard) },
    { service: UsageService, impl: guardedByApiKey(UsageService, usage, guard) },
  ];
}
