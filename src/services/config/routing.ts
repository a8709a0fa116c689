import { DomainError, isDomainError } from '../../domain/errors.js';
import type { StoreWatch } from '../../storage/watch.js';
import type { Bus } from '../../bus/bus.js';
import type { Log } from '../../platform/log.js';
import type { ModuleResult, NodeDelivery } from './delivery.js';

/** The notice of a committed fleet-wide write; `id` names the write on the node that made it. */
const FLEET_TOPIC = 'config.fleet';
interface FleetNotice { productId: number; id: string }

/**
 * How long a node waits for the node holding a device to bring it up to date: the device is sent
 * each module that differs and has the device timeout to answer each (the default schema has
 * nine), after whatever delivery to it is running already.
 */
const SYNC_TIMEOUTS = 10;

/**
 * Where configuration delivery runs in a cluster (docs/architecture.md, "Configuration delivery
 * in a cluster"): all delivery work for a device runs on the node that holds its connection, in
 * the device's turn there, so that one delivery at a time reaches a device across the cluster.
 * - A fleet-wide write is a notice to every node (the writer's own included): each notes it and
 *   fans out to the fleet's devices it holds. The writer does nothing else, so no node delivers
 *   a write twice.
 * - A device's own write is a `sync` request over the bus to the node that holds the device,
 *   which answers each module's outcome. Offline (nobody holds it), this node works out what is
 *   pending; a holder that does not answer in time leaves what is not in sync pending.
 * - A connecting device's hashes are handled by the node it connects to (the gateway's `hello`).
 * With one node the in-process bus makes these the same calls on the same node.
 */
export function createConfigDelivery(deps: { bus: Bus; node: NodeDelivery; log: () => Log; timeoutMs: number; store?: Pick<StoreWatch, 'whenBack'> }) {
  const { bus, node } = deps;
  // The writer's waits for its own fan-out, by notice id.
  const waiting = new Map<string, () => void>();
  let written = 0;

  // Back from an outage of the bus, this node may have missed fleet notices; back from one of the
  // store, deliveries and connects' `hello`s failed meanwhile: the devices it holds are brought
  // up to date with what is committed, product by product, as a fleet write would.
  const catchUp = () => {
    for (const productId of node.productsHere()) void node.fleetWritten(productId);
  };
  bus.whenBack(catchUp);
  deps.store?.whenBack(catchUp);
  bus.listen(FLEET_TOPIC, (payload) => {
    const notice = payload as Partial<FleetNotice>;
    if (!Number.isInteger(notice.productId) || typeof notice.id !== 'string') {
      deps.log().warn({ notice }, 'bad configuration notice ignored');
      return;
    }
    const done = waiting.get(notice.id);
    waiting.delete(notice.id);
    void node.fleetWritten(notice.productId as number).finally(() => done?.());
  });

  /** Sends the device what is committed for it, from the node that holds it. */
  async function sync(productId: number, deviceId: string, modules: ReadonlySet<string>): Promise<ModuleResult[]> {
    let answer;
    try {
      answer = await bus.send(deviceId, { kind: 'sync', productId, modules: [...modules] }, deps.timeoutMs * SYNC_TIMEOUTS);
    } catch (err) {
      if (!isDomainError(err)) throw err;
      // Nobody holds it: what this node's delivery finds is what is pending (it reaches no device).
      if (err.code === 'device_offline') return node.deviceWritten(productId, deviceId, modules);
      // The holder did not answer (it died, or the device's turn is long): what is not in sync stays pending.
      if (err.code === 'device_timeout') return node.unanswered(productId, deviceId);
      throw err;
    }
    if (!answer.ok || !Array.isArray(answer.value)) throw new DomainError('server_error', 'The node holding the device answered the configuration sync with something else');
    return answer.value as ModuleResult[];
  }

  return {
    /**
     * A write that concerns the product's whole fleet (its values, its schema) has committed:
     * every node's connected devices of the fleet take it now, in the background, so that the API
     * answers at once whatever the fleet's size. Resolves when this node's fan-out is done
     * (callers need not wait).
     */
    fleetWriteCommitted(productId: number): Promise<void> {
      const id = `${bus.nodeId}:${(written += 1)}`;
      const done = new Promise<void>((resolve) => waiting.set(id, resolve));
      try {
        // While NATS is away the notice waits in the client's buffer and goes out on reconnection.
        bus.notify(FLEET_TOPIC, { productId, id } satisfies FleetNotice);
      } catch (err) {
        // The bus is closed (the node is stopping): the devices take the write at their next connect.
        waiting.get(id)?.();
        waiting.delete(id);
        deps.log().warn({ err, product: productId }, 'configuration notice not sent');
      }
      return done;
    },

    /**
     * A write of one device's own values has committed: the device takes it now if connected,
     * wherever; resolves with each module's outcome (`modules`: those the write set, which it
     * answers for).
     */
    deviceWriteCommitted: (productId: number, deviceId: string, modules: ReadonlySet<string> = new Set()): Promise<ModuleResult[]> => sync(productId, deviceId, modules),

    /**
     * What a device's configuration depends on changed outside a configuration write (it became a
     * development device, so its own values win): it takes what follows, in the background.
     */
    deviceChanged(productId: number, deviceId: string): void {
      sync(productId, deviceId, new Set()).catch((err) => deps.log().warn({ err, device: deviceId }, 'configuration delivery failed'));
    },

    /** The bus's `sync` for a device held here (the gateway's configSync): in the device's turn. */
    syncHere: (productId: number, deviceId: string, modules: readonly string[]): Promise<ModuleResult[]> => node.deviceWritten(productId, deviceId, new Set(modules)),

    /** A device connected here and reported its hashes (the gateway's configHello). */
    onHello: (deviceId: string, hashes: Record<string, string>): Promise<void> => node.onHello(deviceId, hashes),

    /** Devices with a delivery running or queued on this node now (the node's metrics). */
    inProgress: (): number => node.inProgress(),
  };
}

export type ConfigDelivery = ReturnType<typeof createConfigDelivery>;
