import { EventEmitter } from 'node:events';
import mqtt from 'mqtt';
import { backoffDelay, type BackoffOptions } from './backoff.js';
import { ClaimRefusedError, refusal } from './errors.js';
import type { Bindings } from './config.js';
import { ConfigModules } from './config-modules.js';
import { answerCall, answerGet, type FunctionHandler, type Reply, type Variable, type VariableGetter, type VariableType } from './replies.js';
import { topicMatches } from '../domain/device-protocol.js';
import { createSetupKey, type SetupKey } from './setup/keys.js';
import { Listening, type ClaimOutcome, type ListenOptions } from './setup/listening.js';
import { isCellular, listeningRefusal } from './setup/platforms.js';
import { FirmwareReceiver, firmwareKeyOf, type FirmwareKey, type FirmwareOffer, type FirmwareUpdate } from './firmware.js';

/** An event as the cloud delivers it to a device (docs/device-protocol.md, "Events"). */
export interface DeviceEventMessage {
  name: string;
  data: string | null;
  ttl: number;
  published_at: string;
  coreid: string;
}

/** What the cloud says on `cloud/error` when it refused something the device sent. */
export interface CloudWarning { topic: string; error: string; message: string }

export interface ReconnectOptions extends BackoffOptions {
  /** A connection that lasted this long (ms) starts the backoff over from `minMs`. */
  stableMs: number;
}

export interface DeviceOptions {
  /** mqtt://host:1883, mqtts://host:1883 (TLS) or ws://host:port/mqtt */
  url: string;
  id: string;
  secret: string;
  /** 4 (MQTT 3.1.1, the default) or 5. */
  protocolVersion?: 4 | 5;
  /** Seconds; the cloud drops a device silent for 1.5 times this. */
  keepalive?: number;
  firmwareVersion?: number;
  /** Device OS version reported to the cloud; sets the publish limit (default 5.8.0: 1024 bytes). */
  systemFirmwareVersion?: string;
  /** Backoff bounds (default 1 s to 60 s, reset after 10 s online), or false: never reconnect. */
  reconnect?: Partial<ReconnectOptions> | false;
  /** Passed to mqtt.js for TLS (ca, rejectUnauthorized...). */
  tls?: Pick<mqtt.IClientOptions, 'ca' | 'rejectUnauthorized' | 'servername'>;
  /** How long claim() waits for the cloud's answer (ms, default 10 s). */
  claimTimeoutMs?: number;
  /** Folder where configuration modules are saved between runs; without it they live in memory only. */
  configDir?: string;
  /**
   * Device OS platform id (6 Photon, 12 Argon, 13 Boron, 26 Tracker...). Cellular platforms have
   * no Wi-Fi step in listening mode; the older ones need free memory to enter it.
   */
  platformId?: number;
  /** Free memory in bytes, as the firmware would report it (for the listening mode rule). */
  freeMemory?: number;
  /** Whether the device was claimed before (what `device-id` answers in listening mode). */
  claimed?: boolean;
  /**
   * The product's Ed25519 public key (docs/sdk.md, "Firmware updates"): an image whose signature
   * it does not verify, or that carries none, is refused before anything of it is applied.
   */
  firmwareKey?: FirmwareKey;
  /** Whether the device takes firmware updates when it starts (default true; see disableUpdates()). */
  updatesEnabled?: boolean;
  /** Firmware chunks to ask for, in bytes, when smaller than the cloud offers. */
  firmwareChunkSize?: number;
}

/** The firmware refused to enter listening mode; the device goes on as it was. */
export class ListeningRefusedError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'ListeningRefusedError';
  }
}

/** Where a device stands (Device.state). */
export type DeviceState = 'online' | 'connecting' | 'waiting' | 'closing' | 'closed';

type Waiter = (err?: Error) => void;
interface PendingClaim { resolve: () => void; reject: (err: Error) => void; timer: NodeJS.Timeout }

/**
 * A device, as firmware would be (docs/device-protocol.md; docs/sdk.md): it connects with its id
 * and secret, describes its functions and variables, answers calls and reads, publishes and
 * receives events, presents claim codes, and reconnects with exponential backoff and full jitter.
 *
 * Events: 'online', 'offline', 'error' (Error), 'warning' (CloudWarning), 'signal' (boolean),
 * 'config' (module name, the value applied), 'claimed', 'claim-failed' (ClaimRefusedError): how
 * a claim code given in listening mode fared, 'firmware-offer' (FirmwareOffer),
 * 'firmware-progress' (FirmwareOffer, bytes held), 'firmware-failed' (FirmwareOffer, error): an
 * update refused or whose checks failed.
 */
export class Device extends EventEmitter {
  readonly id: string;
  private client: mqtt.MqttClient | null = null;
  private readonly functions = new Map<string, FunctionHandler>();
  private readonly variables = new Map<string, Variable>();
  private readonly subscriptions: Array<{ filter: string; handler: (e: DeviceEventMessage) => void }> = [];
  private readonly claims: PendingClaim[] = [];
  private readonly modules: ConfigModules;
  /** Configuration messages are handled one at a time, in order: each ends with a save. */
  private configQueue: Promise<void> = Promise.resolve();
  private readonly waiters = new Set<Waiter>();
  private attempt = 0;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  private online = false;
  private onlineSince = 0;
  private isClaimed: boolean;
  /** Given during setup; presented on every connect until the cloud settles it. */
  private claimCode: string | undefined;
  private claiming: Promise<ClaimOutcome> | undefined;
  private setupKey: SetupKey | undefined;
  private listening: Listening | null = null;
  private firmwareVersion: number | undefined;
  private updatesOn: boolean;
  private readonly firmware: FirmwareReceiver;
  private firmwareOffer: ((offer: FirmwareOffer) => boolean | Promise<boolean>) | undefined;
  private firmwareCheck: ((image: Buffer, offer: FirmwareOffer) => string | null | undefined | Promise<string | null | undefined>) | undefined;
  private firmwareHandler: ((update: FirmwareUpdate) => void | Promise<void>) | undefined;
  /** Firmware messages are handled one at a time, in order (a chunk may end in the image's checks). */
  private firmwareQueue: Promise<void> = Promise.resolve();

  constructor(private readonly options: DeviceOptions) {
    super();
    this.id = options.id.toLowerCase();
    // An 'error' without a listener would throw; a device keeps running and reconnects instead.
    this.on('error', () => undefined);
    this.modules = new ConfigModules(options.configDir, (err) => this.emit('error', err));
    this.isClaimed = options.claimed ?? false;
    this.firmwareVersion = options.firmwareVersion;
    this.updatesOn = options.updatesEnabled ?? true;
    this.firmware = this.firmwareReceiver(options);
  }

  /** Whether the cloud has confirmed a claim of this device. */
  get claimed(): boolean {
    return this.isClaimed;
  }

  get connected(): boolean {
    return this.online;
  }

  /**
   * Where the device stands: `online`; `connecting`; `waiting` for its next try after a failure
   * (backoff); `closing` or `closed` once it has stopped for good, by close() or because the
   * cloud refused its credentials: no further try comes.
   */
  get state(): DeviceState {
    if (this.online) return 'online';
    if (this.retry) return 'waiting';
    if (this.closed) return this.client ? 'closing' : 'closed';
    return 'connecting';
  }

  /** Registers a cloud function (at most 15, names of 1-64 characters); sends `hello` again if online. */
  function(name: string, handler: FunctionHandler): this {
    this.functions.set(name, handler);
    this.describe();
    return this;
  }

  /** Registers a cloud variable read through `get` (at most 20); sends `hello` again if online. */
  variable(name: string, type: VariableType, get: VariableGetter): this {
    this.variables.set(name, { type, get });
    this.describe();
    return this;
  }

  /**
   * Registers a configuration module (docs/sdk.md, "Configuration"): its saved value, if any, is
   * loaded and applied now, and the cloud hears what the device holds on every connect. Names are
   * 1-64 letters, digits or underscores, each registered once.
   */
  async configModule(name: string, bindings: Bindings): Promise<void> {
    await this.modules.register(name, bindings);
    this.reportConfig();
  }

  /** A registered module's current value, as the cloud stores it. */
  configValue(name: string): Record<string, unknown> | undefined {
    return this.modules.value(name);
  }

  /** Whether the device takes firmware updates now. */
  get updatesEnabled(): boolean {
    return this.updatesOn;
  }

  /** The product firmware version the device runs (what its `hello` says). */
  get runningFirmwareVersion(): number | undefined {
    return this.firmwareVersion;
  }

  /**
   * As Device OS's System.disableUpdates(): offers are refused (`updates_disabled`) and the cloud
   * keeps the update pending until enableUpdates(), unless the product forces updates.
   */
  disableUpdates(): this {
    return this.setUpdates(false);
  }

  /** Takes updates again: the cloud hears it at once and sends what waited. */
  enableUpdates(): this {
    return this.setUpdates(true);
  }

  /**
   * Restarts as firmware would (System.reset()): the connection ends cleanly (no will), the device
   * connects again and says `hello`, running `firmwareVersion` when given (an update applied),
   * else what it ran. Resolves once it is back online.
   */
  async restart(firmwareVersion?: number): Promise<void> {
    if (firmwareVersion !== undefined) this.firmwareVersion = firmwareVersion;
    const client = this.client;
    // Let go first: its 'close' then schedules no reconnect of its own.
    this.client = null;
    this.setOnline(false);
    if (client) {
      const forced = setTimeout(() => client.end(true), 2000);
      await client.endAsync().finally(() => clearTimeout(forced));
    }
    if (this.closed) return;
    await this.connect();
  }

  /** Decides on each offer before anything is sent: false refuses it (`refused`). */
  onFirmwareOffer(decide: (offer: FirmwareOffer) => boolean | Promise<boolean>): this {
    this.firmwareOffer = decide;
    return this;
  }

  /**
   * The application's own check of a whole image, after its SHA-256 and signature held: an error
   * name (e.g. "wrong_platform") refuses it with that error; nothing is applied.
   */
  onFirmwareCheck(check: (image: Buffer, offer: FirmwareOffer) => string | null | undefined | Promise<string | null | undefined>): this {
    this.firmwareCheck = check;
    return this;
  }

  /**
   * Receives each verified image and decides when to apply it (`update.apply()` restarts the
   * device on the new version). Without a handler the device applies every image at once, as
   * Device OS does.
   */
  onFirmwareUpdate(handler: (update: FirmwareUpdate) => void | Promise<void>): this {
    this.firmwareHandler = handler;
    return this;
  }

  /**
   * Receives events whose name matches `filter`: a name (that name only), `family/#`, or any MQTT
   * filter over names ("Events"). The device subscribes to `devices/<id>/cloud/events/<filter>`
   * (at once when it is online, else at its next connect), so the cloud sends it only the events
   * it asked for; past MAX_EVENT_FILTERS filters it takes all of them. Throws a TypeError for a
   * filter that is not one.
   */
  subscribe(filter: string, handler: (event: DeviceEventMessage) => void): this {
    if (!isNameFilter(filter)) throw new TypeError(`not an event name or an MQTT filter over names: ${JSON.stringify(filter)}`);
    const known = this.subscriptions.some((s) => s.filter === filter);
    this.subscriptions.push({ filter, handler });
    const client = this.client;
    if (!known && client && this.online) {
      const [topic] = this.eventFilters().slice(-1);
      client.subscribeAsync(topic as string, { qos: 1 }).then((granted) => {
        if (granted.some((g) => g.qos >= 0x80)) this.emit('error', new Error(`the cloud refused the subscription to ${topic}`));
      }, (err: Error) => { if (this.client === client) this.emit('error', err); });
    }
    return this;
  }

  onSignal(handler: (on: boolean) => void): this {
    return this.on('signal', handler);
  }

  /**
   * Connects and resolves once the device is subscribed and has said `hello`. Rejects with
   * CredentialsRefusedError when the cloud refuses the id or secret, and when close() is called
   * first. Network failures are retried with backoff and do not reject; with `timeoutMs`, a
   * device not online by then is closed and the promise rejects.
   */
  connect(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.online) return Promise.resolve();
    this.closed = false;
    const ready = new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = (err) => {
        this.waiters.delete(waiter);
        if (timer) clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      this.waiters.add(waiter);
      if (options.timeoutMs !== undefined) {
        timer = setTimeout(() => {
          waiter(new Error(`the device did not connect within ${options.timeoutMs} ms`));
          void this.close();
        }, options.timeoutMs);
      }
    });
    if (!this.client && !this.retry) this.open();
    return ready;
  }

  /**
   * Listening mode (docs/sdk.md, "Listening mode"), as the firmware's `WiFi.listen()`: the device
   * drops its cloud connection and serves Particle's device-setup protocol over HTTP and TCP
   * until an app sends `connect-ap`; it then joins the simulated Wi-Fi network, connects and
   * presents the claim code it was given. Throws ListeningRefusedError, the device untouched,
   * when the platform's free-memory rule forbids it.
   */
  async listen(options: ListenOptions = {}): Promise<Listening> {
    const refused = listeningRefusal(this.options.platformId, this.options.freeMemory);
    if (refused) throw new ListeningRefusedError(refused);
    if (this.listening?.active) return this.listening;
    // Opened first: a port that is taken leaves the device as it was.
    const session = await Listening.start({
      id: this.id,
      cellular: isCellular(this.options.platformId),
      isClaimed: () => this.isClaimed,
      key: (this.setupKey ??= createSetupKey()),
      setClaimCode: (code) => { this.claimCode = code; },
      goOnline: async () => {
        await this.connect();
        return this.claiming;
      },
      left: (s) => { if (this.listening === s) this.listening = null; },
    }, options);
    this.listening = session;
    this.suspend();
    return session;
  }

  /** Leaves the cloud without giving up on it: listening mode holds the radio. */
  private suspend(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const client = this.client;
    this.client = null;
    client?.end(true);
    this.setOnline(false);
  }

  /**
   * Publishes an event (docs/device-protocol.md, "Events"); resolves on the cloud's PUBACK, and
   * rejects if the connection it went out on closes before that.
   */
  async publish(name: string, data?: string | null, options: { ttl?: number; private?: boolean } = {}): Promise<void> {
    const client = this.mustBeConnected();
    const body = { data: data ?? null, ttl: options.ttl ?? 60, private: options.private ?? true };
    // Each connection is a client of its own, and a new one does not send again what an old one
    // had in flight: a connection that closes before the PUBACK rejects the publish instead of
    // leaving it unsettled. The cloud may or may not have stored the event.
    await new Promise<void>((resolve, reject) => {
      const lost = () => reject(new Error('the connection closed before the cloud acknowledged the event'));
      client.once('close', lost);
      client.publish(`devices/${this.id}/events/${name}`, JSON.stringify(body), { qos: 1 }, (err) => {
        client.off('close', lost);
        if (err) reject(err);
        else resolve();
      });
    });
  }

  /** Presents a claim code ("Claiming"); resolves when the cloud says the device is claimed. */
  claim(code: string): Promise<void> {
    const client = this.mustBeConnected();
    return new Promise((resolve, reject) => {
      const pending: PendingClaim = {
        resolve, reject,
        timer: setTimeout(() => {
          this.dropClaim(pending);
          reject(new Error('the cloud did not answer the claim in time'));
        }, this.options.claimTimeoutMs ?? 10_000),
      };
      this.claims.push(pending);
      client.publish(`devices/${this.id}/claim`, JSON.stringify({ code }), { qos: 1 });
    });
  }

  /** Disconnects for good (DISCONNECT, so no will is published) and stops reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    await this.listening?.stop();
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const client = this.client;
    this.client = null;
    const stopped = new Error('the device was closed');
    for (const w of [...this.waiters]) w(stopped);
    for (const c of this.claims.splice(0)) { clearTimeout(c.timer); c.reject(stopped); }
    if (client) {
      // A clean end waits for in-flight packets; a dead link would hold it forever.
      const forced = setTimeout(() => client.end(true), 2000);
      await client.endAsync().finally(() => clearTimeout(forced));
    }
    // A configuration being applied finishes, its file saved: once close() resolves, what the
    // device holds on disk is settled (a caller may read or replace the files).
    await this.configQueue;
    this.setOnline(false);
  }

  private setUpdates(on: boolean): this {
    if (this.updatesOn === on) return this;
    this.updatesOn = on;
    this.describe();
    return this;
  }

  private firmwareReceiver(options: DeviceOptions): FirmwareReceiver {
    const send = (leaf: 'ready' | 'ack' | 'done', body: Record<string, unknown>) => {
      // Not `online` yet is fine: an offer may come right after `hello`, before the connect settles.
      if (this.client) this.client.publish(`devices/${this.id}/ota/${leaf}`, JSON.stringify(body), { qos: leaf === 'ack' ? 0 : 1 });
    };
    return new FirmwareReceiver({
      send,
      enabled: () => this.updatesOn,
      key: options.firmwareKey === undefined ? null : firmwareKeyOf(options.firmwareKey),
      chunkSize: options.firmwareChunkSize,
      offer: (offer) => {
        this.emit('firmware-offer', offer);
        return this.firmwareOffer ? this.firmwareOffer(offer) : true;
      },
      check: (image, offer) => this.firmwareCheck?.(image, offer),
      failed: (offer, error) => this.emit('firmware-failed', offer, error),
      progress: (offer, received) => this.emit('firmware-progress', offer, received),
      received: (image, offer) => {
        const update: FirmwareUpdate = { ...offer, image, apply: (version = offer.version) => this.restart(version) };
        // The application's handler runs on its own: a restart must not wait behind the message queue.
        void Promise.resolve().then(() => (this.firmwareHandler ? this.firmwareHandler(update) : update.apply())).catch((err: Error) => this.emit('error', err));
      },
    });
  }

  private mustBeConnected(): mqtt.MqttClient {
    if (!this.client || !this.online) throw new Error('the device is not connected');
    return this.client;
  }

  private open(): void {
    const o = this.options;
    const client = mqtt.connect(o.url, {
      clientId: this.id, username: this.id, password: o.secret,
      protocolVersion: o.protocolVersion ?? 4, keepalive: o.keepalive ?? 60, clean: true,
      // Reconnects are ours (backoff with jitter); mqtt.js would retry at a fixed period.
      reconnectPeriod: 0, connectTimeout: 10_000, ...o.tls,
    });
    this.client = client;
    let acknowledged = false;
    client.on('connect', () => {
      acknowledged = true;
      // Replies are small writes; Nagle's algorithm would hold each behind the previous ACK.
      (client.stream as unknown as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
      void this.afterConnect(client);
    });
    client.on('message', (topic, payload) => this.onMessage(client, topic, payload));
    client.on('error', (err: Error & { code?: unknown }) => {
      // A client the device has let go of (closed, or replaced) may still fail on its way out.
      if (this.client !== client) return;
      // Only a CONNACK refuses the device; later reason codes (a PUBACK 0x87...) are not about it.
      const refused = acknowledged ? null : refusal(err.code);
      if (refused?.final) {
        this.closed = true;
        for (const w of [...this.waiters]) w(refused);
      } else if (refused) {
        // Banned for a while: the next tries come at the slow end of the backoff.
        this.attempt = Math.max(this.attempt, 30);
      }
      this.emit('error', refused ?? err);
    });
    client.on('close', () => {
      if (this.client !== client) return;
      this.client = null;
      // Only a connection that held for a while starts the backoff over: a cloud that accepts and
      // drops at once (or another connection that keeps taking the id over) is not hammered.
      if (this.online && Date.now() - this.onlineSince >= this.reconnectOptions().stableMs) this.attempt = 0;
      this.setOnline(false);
      this.scheduleReconnect();
    });
  }

  /**
   * The device's event filters: one per name filter the application subscribed to, or all events
   * once there are more than MAX_EVENT_FILTERS (the cloud grants a device 32 filters). The last
   * is the newest filter's (or the one for all events).
   */
  private eventFilters(): string[] {
    const names = [...new Set(this.subscriptions.map((s) => s.filter))];
    const events = `devices/${this.id}/cloud/events/`;
    return names.length > MAX_EVENT_FILTERS ? [`${events}#`] : names.map((f) => `${events}${f}`);
  }

  /**
   * "Connecting": sessions are not kept, so subscribe and describe the device on every connect.
   * What the cloud sends besides events (calls, reads, signals, claims, errors, configuration,
   * firmware) is under `cloud/+`, `cloud/config/` and `cloud/ota/`; events only as subscribed
   * (`subscribe`): a device that takes none is not sent its fleet's events.
   */
  private async afterConnect(client: mqtt.MqttClient): Promise<void> {
    try {
      const cloud = `devices/${this.id}/cloud`;
      const filters = [`${cloud}/+`, `${cloud}/config/#`, `${cloud}/ota/#`, ...this.eventFilters()];
      const granted = await client.subscribeAsync(filters, { qos: 1 });
      const refused = granted.filter((g) => g.qos >= 0x80).map((g) => g.topic);
      if (refused.length > 0) throw new Error(`the cloud refused the subscription to ${refused.join(', ')}`);
      await client.publishAsync(`devices/${this.id}/hello`, this.helloPayload(), { qos: 1 });
      if (this.modules.size > 0) await client.publishAsync(`devices/${this.id}/config/hello`, this.modules.helloPayload(), { qos: 1 });
      if (this.client !== client) return;
      this.onlineSince = Date.now();
      this.setOnline(true);
      // The firmware presents a claim code it holds on each connect until the cloud settles it.
      this.claiming = this.claimCode === undefined ? undefined : this.presentClaimCode(this.claimCode);
      for (const w of [...this.waiters]) w();
    } catch (err) {
      this.emit('error', err as Error);
      // A device that cannot hear the cloud is of no use connected: drop it and try again.
      if (this.client === client) client.end(true);
    }
  }

  private async presentClaimCode(code: string): Promise<ClaimOutcome> {
    try {
      await this.claim(code);
    } catch (err) {
      // Refused by the cloud (unknown, used or expired code; claimed by another): kept, it would
      // be refused again. Lost in a dropped connection: kept for the next connect.
      if (err instanceof ClaimRefusedError) {
        if (this.claimCode === code) this.claimCode = undefined;
        this.emit('claim-failed', err);
        return { claimed: false, error: err.code };
      }
      throw err;
    }
    if (this.claimCode === code) this.claimCode = undefined;
    this.isClaimed = true;
    this.emit('claimed');
    return { claimed: true };
  }

  private reconnectOptions(): ReconnectOptions {
    return { minMs: 1000, maxMs: 60_000, stableMs: 10_000, ...(this.options.reconnect || {}) };
  }

  private scheduleReconnect(): void {
    if (this.closed || this.listening || this.options.reconnect === false) return;
    const delay = backoffDelay(this.attempt++, this.reconnectOptions());
    this.retry = setTimeout(() => {
      this.retry = null;
      if (!this.closed) this.open();
    }, delay);
  }

  private setOnline(on: boolean): void {
    if (this.online === on) return;
    this.online = on;
    this.emit(on ? 'online' : 'offline');
  }

  private helloPayload(): string {
    const variables = Object.fromEntries([...this.variables].map(([name, v]) => [name, v.type]));
    const hello: Record<string, unknown> = { functions: [...this.functions.keys()], variables };
    if (this.firmwareVersion !== undefined) hello.firmware_version = this.firmwareVersion;
    hello.system_firmware_version = this.options.systemFirmwareVersion ?? '5.8.0';
    hello.updates_enabled = this.updatesOn;
    return JSON.stringify(hello);
  }

  /** "The device describes itself": again whenever something changes while online. */
  private describe(): void {
    if (this.client && this.online) this.client.publish(`devices/${this.id}/hello`, this.helloPayload(), { qos: 1 });
  }

  private reportConfig(): void {
    if (this.client && this.online) this.client.publish(`devices/${this.id}/config/hello`, this.modules.helloPayload(), { qos: 1 });
  }

  /** Applies one module from the cloud, saves it, and answers with its status. */
  private async configure(client: mqtt.MqttClient, body: Record<string, unknown>): Promise<void> {
    const { status, applied } = await this.modules.receive(body);
    if (applied) this.emit('config', applied.name, applied.value);
    client.publish(`devices/${this.id}/config/ack`, JSON.stringify({ id: body.id, status }), { qos: 1 });
  }

  private dropClaim(claim: PendingClaim): void {
    const i = this.claims.indexOf(claim);
    if (i >= 0) this.claims.splice(i, 1);
  }

  private onMessage(client: mqtt.MqttClient, topic: string, payload: Buffer): void {
    const prefix = `devices/${this.id}/cloud/`;
    if (!topic.startsWith(prefix)) return;
    const leaf = topic.slice(prefix.length);
    // The one binary payload: a chunk of firmware.
    if (leaf === 'ota/chunk') {
      this.firmwareQueue = this.firmwareQueue.then(() => this.firmware.onChunk(payload)).catch((err: Error) => { this.emit('error', err); });
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
    } catch {
      return;
    }
    // QoS 0: the reply is the acknowledgement, and the cloud drops late ones anyway.
    const reply = (answer: Reply) => void client.publish(`devices/${this.id}/reply`, JSON.stringify(answer), { qos: 0 });
    // Handlers are the application's: one that throws must not take the connection down with it.
    try {
      if (leaf === 'call') void answerCall(this.functions.get(String(body.name)), body).then(reply);
      else if (leaf === 'get') void answerGet(this.variables.get(String(body.name)), body).then(reply);
      else if (leaf === 'signal') this.emit('signal', body.signal === true);
      else if (leaf === 'error') this.emit('warning', body as unknown as CloudWarning);
      else if (leaf === 'claim') this.settleClaim(body);
      else if (leaf === 'config/set') {
        this.configQueue = this.configQueue.then(() => this.configure(client, body)).catch((err: Error) => { this.emit('error', err); });
      }
      else if (leaf === 'ota/begin') {
        this.firmwareQueue = this.firmwareQueue.then(() => this.firmware.onBegin(body)).catch((err: Error) => { this.emit('error', err); });
      }
      else if (leaf.startsWith('events/')) this.deliver({ ...(body as unknown as DeviceEventMessage), name: leaf.slice('events/'.length) });
    } catch (err) {
      this.emit('error', err as Error);
    }
  }

  /** Claims are answered in the order they were presented ("Claiming"). */
  private settleClaim(body: Record<string, unknown>): void {
    const waiting = this.claims.shift();
    if (!waiting) return;
    clearTimeout(waiting.timer);
    if (body.ok === true) {
      this.isClaimed = true;
      waiting.resolve();
    } else waiting.reject(new ClaimRefusedError(String(body.error)));
  }

  private deliver(event: DeviceEventMessage): void {
    for (const s of this.subscriptions) {
      if (!topicMatches(s.filter, event.name)) continue;
      try {
        s.handler(event);
      } catch (err) {
        this.emit('error', err as Error);
      }
    }
  }
}

/** Event filters a device subscribes to one by one; past this many, to all events (`cloud/events/#`). */
export const MAX_EVENT_FILTERS = 16;

/** An MQTT filter over event names: levels of one or more characters, `+` and a last `#` alone in theirs. */
function isNameFilter(filter: string): boolean {
  const levels = filter.split('/');
  return filter.length > 0 && filter.length <= 200 && levels.every((l, i) => l.length > 0
    && (l === '#' ? i === levels.length - 1 : l === '+' || !/[+#]/.test(l)));
}

/** Creates a device; call `connect()` after registering its functions and variables. */
export function createDevice(options: DeviceOptions): Device {
  return new Device(options);
}
