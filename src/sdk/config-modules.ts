import { apply, check, ConfigStatus, read, type Bindings } from './config.js';
import { loadModule, saveModule } from './config-store.js';

interface ConfigModule { bindings: Bindings; hash: string | null }

/**
 * A device's configuration modules (docs/sdk.md, "Configuration modules"; docs/device-protocol.md,
 * "Configuration"): what is registered, the hash of what each holds, applying what the cloud sends
 * and saving it under `dir` between runs.
 */
export class ConfigModules {
  private readonly modules = new Map<string, ConfigModule>();

  constructor(private readonly dir: string | undefined, private readonly onError: (err: Error) => void) {}

  get size(): number {
    return this.modules.size;
  }

  /** Registers a module; its saved value, if any and still valid, is loaded and applied now. */
  async register(name: string, bindings: Bindings): Promise<void> {
    if (!/^[A-Za-z0-9_]{1,64}$/.test(name)) throw new Error(`configuration module names are 1-64 letters, digits or underscores, not ${JSON.stringify(name)}`);
    if (this.modules.has(name)) throw new Error(`configuration module ${name} is already registered`);
    const module: ConfigModule = { bindings, hash: null };
    this.modules.set(name, module);
    const saved = this.dir ? await loadModule(this.dir, name).catch((err: Error) => { this.onError(err); return null; }) : null;
    if (saved && check(bindings, saved.value) === ConfigStatus.ok) {
      apply(bindings, saved.value);
      module.hash = saved.hash;
    }
  }

  /** A registered module's current value, as the cloud stores it. */
  value(name: string): Record<string, unknown> | undefined {
    const module = this.modules.get(name);
    return module ? read(module.bindings) : undefined;
  }

  /** The `config/hello` payload: the hash of each module held; ones never received are left out. */
  helloPayload(): string {
    const modules: Record<string, string> = {};
    for (const [name, m] of this.modules) if (m.hash !== null) modules[name] = m.hash;
    return JSON.stringify({ modules });
  }

  /** Applies one module from the cloud and saves it; answers the status to acknowledge, and what was applied. */
  async receive(body: Record<string, unknown>): Promise<{ status: number; applied?: { name: string; value: Record<string, unknown> } }> {
    const name = String(body.module);
    const module = this.modules.get(name);
    let status: number = module ? check(module.bindings, body.value) : ConfigStatus.unknownModule;
    if (module && status === ConfigStatus.ok && typeof body.hash !== 'string') status = ConfigStatus.invalid;
    if (!module || status !== ConfigStatus.ok) return { status };
    const value = body.value as Record<string, unknown>;
    apply(module.bindings, value);
    module.hash = body.hash as string;
    if (this.dir) {
      // Unsaved, the module is still applied; after a restart the old hash brings it again.
      await saveModule(this.dir, name, { version: 1, hash: module.hash, value: read(module.bindings) }).catch(this.onError);
    }
    return { status, applied: { name, value } };
  }
}
