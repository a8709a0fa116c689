import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createMetrics } from '../../src/platform/metrics.js';

/**
 * The example Grafana dashboard (docs/grafana/skyport-dashboard.json, docs/operations.md,
 * "Watching a cluster") asks only for metrics a node serves: a renamed metric fails here rather
 * than leaving an empty panel.
 */
test('every metric the example dashboard queries is one a node serves', async () => {
  const dashboard = JSON.parse(readFileSync(new URL('../../docs/grafana/skyport-dashboard.json', import.meta.url), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  // Every source given, so that every gauge is served: the PostgreSQL pool's, the webhooks' and the firmware's too.
  const metrics = createMetrics({
    devicesConnected: () => 0, configDeliveriesInProgress: () => 0, storageUp: () => true,
    storageConnections: () => ({ max: 10, inUse: 0, idle: 1, waiting: 0 }),
    webhookQueue: async () => ({ depth: 0, oldestSeconds: 0 }), firmwareTransfers: () => 0,
  }, { processMetrics: true });
  const served = new Set((await metrics.registry.getMetricsAsJSON()).map((m) => m.name));
  const asked = new Set<string>();
  for (const panel of dashboard.panels) {
    assert.ok(panel.targets.length > 0, `${panel.title} has a query`);
    for (const { expr } of panel.targets) {
      for (const [name] of expr.matchAll(/\b(skyport|nodejs|process)_[a-z_]+/g)) asked.add(name.replace(/_(bucket|count|sum)$/, ''));
    }
  }
  assert.ok(asked.size >= 8, 'the dashboard covers the node\'s metrics');
  assert.deepEqual([...asked].filter((name) => !served.has(name)), []);
});
