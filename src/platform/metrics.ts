import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PoolState } from '../storage/db.js';

/**
 * The node's Prometheus metrics (prom-client), in a registry of its own: a process may hold
 * several nodes (the tests do), and each answers for itself. The Node.js process metrics
 * (`nodejs_eventloop_lag_seconds`, memory, CPU, handles) come with prom-client's defaults.
 */
export interface Metrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly deviceCommands: Histogram<'kind' | 'outcome'>;
  readonly tokensIssued: Counter<'grant'>;
  readonly deviceConnects: Counter<'outcome'>;
  readonly configDeliveries: Counter<'outcome'>;
  readonly busRequests: Histogram<'kind' | 'outcome'>;
  readonly storageUnavailable: Counter;
  readonly rateLimited: Counter<'limit'>;
  readonly webhookAttempts: Counter<'outcome'>;
  readonly webhookLatency: Histogram;
  readonly firmwareBytesSent: Counter;
  readonly firmwareUpdates: Counter<'outcome'>;
}

export function createMetrics(sources: { devicesConnected: () => number; configDeliveriesInProgress: () => number; storageUp: () => boolean; webhookQueue?: () => Promise<{ depth: number; oldestSeconds: number }>; firmwareTransfers?: () => number; storageConnections?: () => PoolState }, options: { processMetrics: boolean }): Metrics {
  const registry = new Registry();
  // They watch the event loop and the garbage collector from start-up on: only for a reader.
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'skyport_devices_connected', help: 'Devices connected to this node now.', registers: [registry],
    collect() { this.set(sources.devicesConnected()); },
  });
  new Gauge({
    name: 'skyport_config_deliveries_in_progress', help: 'Devices connected to this node with a configuration delivery running or queued now.', registers: [registry],
    collect() { this.set(sources.configDeliveriesInProgress()); },
  });
  new Gauge({
    name: 'skyport_storage_up', help: 'Whether this node reaches its store now (1) or found it unreachable and has not reached it since (0).', registers: [registry],
    collect() { this.set(sources.storageUp() ? 1 : 0); },
  });
  const transfers = sources.firmwareTransfers;
  if (transfers) {
    new Gauge({
      name: 'skyport_firmware_transfers_in_progress', help: 'Firmware transfers this node runs now (at most FIRMWARE_TRANSFERS).', registers: [registry],
      collect() { this.set(transfers()); },
    });
  }
  // PostgreSQL's pool: whether the API's requests and the gateway's batched writes wait for a connection.
  const pool = sources.storageConnections;
  if (pool) {
    new Gauge({
      name: 'skyport_storage_connections', help: 'Connections of this node to PostgreSQL now: in_use (running a statement or a transaction) or idle.', labelNames: ['state'], registers: [registry],
      collect() {
        const p = pool();
        this.set({ state: 'in_use' }, p.inUse);
        this.set({ state: 'idle' }, p.idle);
      },
    });
    new Gauge({
      name: 'skyport_storage_connections_max', help: 'The most connections this node opens to PostgreSQL (DATABASE_POOL_SIZE).', registers: [registry],
      collect() { this.set(pool().max); },
    });
    new Gauge({
      name: 'skyport_storage_waiting', help: 'Statements and transactions of this node waiting for a connection to PostgreSQL now (the pool is in use up to its size).', registers: [registry],
      collect() { this.set(pool().waiting); },
    });
  }
  // Read from the store when scraped: the queue is the cluster's, the same on every node.
  const queue = sources.webhookQueue;
  if (queue) {
    new Gauge({
      name: 'skyport_webhook_queue_depth', help: 'Webhook deliveries waiting to be sent or being sent, in the whole cluster.', registers: [registry],
      async collect() { this.set((await queue().catch(() => ({ depth: NaN }))).depth); },
    });
    new Gauge({
      name: 'skyport_webhook_oldest_pending_seconds', help: 'Age of the oldest webhook delivery not yet delivered or failed for good.', registers: [registry],
      async collect() { this.set((await queue().catch(() => ({ oldestSeconds: NaN }))).oldestSeconds); },
    });
  }
  return {
    registry,
    storageUnavailable: new Counter({ name: 'skyport_storage_unavailable_total', help: 'Statements of this node that failed because the store was unreachable (each request among them answered 503).', registers: [registry] }),
    httpRequests: new Counter({ name: 'skyport_http_requests_total', help: 'HTTP requests answered, by route pattern and status.', labelNames: ['method', 'route', 'status'], registers: [registry] }),
    httpDuration: new Histogram({
      name: 'skyport_http_request_duration_seconds', help: 'Time to answer an HTTP request, by route pattern.', labelNames: ['method', 'route'], registers: [registry],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    }),
    deviceCommands: new Histogram({
      name: 'skyport_device_commands_seconds', help: 'Function calls, variable reads, pings and signals sent to devices, by outcome (ok, or the error code), and their time.',
      labelNames: ['kind', 'outcome'], registers: [registry], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    }),
    deviceConnects: new Counter({ name: 'skyport_device_connects_total', help: 'Device CONNECTs on this node: accepted, or why refused (credentials, banned, identifier, version, unavailable).', labelNames: ['outcome'], registers: [registry] }),
    configDeliveries: new Counter({
      name: 'skyport_config_deliveries_total', help: 'Configuration modules this node had to send to its devices, by outcome: acknowledged, refused, pending_offline, pending_timeout.',
      labelNames: ['outcome'], registers: [registry],
    }),
    busRequests: new Histogram({
      name: 'skyport_bus_requests_seconds', help: 'Requests from this node to the node holding a device over the cluster bus, by command kind and outcome (ok, or the error code), and their time.',
      labelNames: ['kind', 'outcome'], registers: [registry], buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
    }),
    rateLimited: new Counter({
      name: 'skyport_rate_limited_total', help: 'Requests this node refused with 429 because their client address was over a limit: requests, event_streams, open_streams or tokens.',
      labelNames: ['limit'], registers: [registry],
    }),
    webhookAttempts: new Counter({ name: 'skyport_webhook_attempts_total', help: 'Webhook delivery attempts this node made, by outcome: delivered, failed (to be retried or for good), skipped (the host answered mostly errors lately).', labelNames: ['outcome'], registers: [registry] }),
    webhookLatency: new Histogram({
      name: 'skyport_webhook_attempt_seconds', help: 'Time from sending a webhook request to its answer (or failure).', registers: [registry],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
    }),
    firmwareBytesSent: new Counter({ name: 'skyport_firmware_bytes_sent_total', help: 'Firmware image bytes this node sent to devices (resumed transfers send only the rest).', registers: [registry] }),
    firmwareUpdates: new Counter({
      name: 'skyport_firmware_updates_total', help: 'Firmware updates whose outcome this node saw: succeeded (the device came back on the new version) or failed (it refused, its check failed, it came back on the old version, it did not come back, or its transfer stalled).',
      labelNames: ['outcome'], registers: [registry],
    }),
    tokensIssued: new Counter({ name: 'skyport_tokens_issued_total', help: 'Access tokens issued by the token endpoint, by grant type.', labelNames: ['grant'], registers: [registry] }),
  };
}
