/**
 * The page: settings, sign-up, device setup, and the lamp's button (README.md).
 *
 * The order a person goes through: create an account (Skyport makes the customer and answers its
 * token), get a claim code with that token, hand it and the home Wi-Fi's credentials to the device
 * over the device's own network, wait until the device is online in the customer's account, then
 * call its function with the customer's token. The token lives in this page's memory only.
 */
import { callFunction, claimCode, createCustomer, listDevices } from './api.js';
import { deviceAt, securityName } from './device-setup.js';

/** How long the device may take to come online in the customer's account after connect-ap. */
const ONLINE_TIMEOUT_MS = 60_000;
/**
 * A device that answers in listening mode again, this long after connect-ap and still not online,
 * could not join the network (a wrong password, or a network out of reach) and is back waiting.
 */
const JOIN_GRACE_MS = 5_000;
const POLL_MS = 1_000;

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the page knows; nothing of it is stored anywhere. */
const state = {
  token: undefined,
  claimCode: undefined,
  device: undefined,
  deviceId: undefined,
  publicKey: undefined,
  networks: [],
  /** Whether a join was tried and failed: the next try gives the device the claim code again. */
  retrying: false,
};

/** Writes a line in a live region (role=status): screen readers read it out when it changes. */
function say(region, text, { error = false } = {}) {
  region.textContent = text;
  region.classList.toggle('error', error);
}
const sayError = (region, err) => say(region, err instanceof Error ? err.message : String(err), { error: true });

/** The settings form's values, checked: every field is needed, the addresses must be URLs. */
function settings() {
  const read = (id) => $(id).value.trim();
  const s = { api: read('api'), product: read('product'), client: read('client'), device: read('device') };
  const missing = [['api', 'the Skyport API URL'], ['product', 'the product'], ['client', 'the OAuth client ID'], ['device', 'the device setup address']]
    .filter(([key]) => s[key] === '').map(([, name]) => name);
  if (missing.length > 0) throw new Error(`Fill in the settings first: ${missing.join(', ')}.`);
  for (const key of ['api', 'device']) {
    if (!URL.canParse(s[key]) || !/^https?:$/.test(new URL(s[key]).protocol)) throw new Error(`${s[key]} is not an http(s) address.`);
  }
  return s;
}

/** The query string fills the settings in: ?api=&product=&client=&device=. */
function prefill() {
  const query = new URLSearchParams(location.search);
  for (const key of ['api', 'product', 'client', 'device']) {
    if (query.has(key)) $(key).value = query.get(key);
  }
}

async function onCreateAccount(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const status = $('account-status');
  const email = $('email').value.trim();
  form.querySelector('button').disabled = true;
  try {
    const s = settings();
    say(status, 'Creating your account…');
    state.token = (await createCustomer(s, email, $('password').value)).access_token;
    $('password').value = '';
    say(status, `Signed in as ${email}. Now set up your lamp: put it in listening mode and join its Wi-Fi.`);
    $('start-setup').disabled = false;
  } catch (err) {
    sayError(status, err);
  } finally {
    form.querySelector('button').disabled = false;
  }
}

/** Lists the networks the device sees as radio buttons named by their SSID. */
function showNetworks(networks) {
  state.networks = networks;
  const list = $('networks');
  list.replaceChildren(...networks.map((n, i) => {
    const item = document.createElement('li');
    const radio = Object.assign(document.createElement('input'), { type: 'radio', name: 'ssid', id: `net-${i}`, value: String(i) });
    const label = Object.assign(document.createElement('label'), { htmlFor: radio.id, textContent: n.ssid });
    const detail = Object.assign(document.createElement('span'), { id: `net-${i}-detail`, className: 'hint', textContent: ` ${securityName(n.sec)}, signal ${n.rssi} dBm, channel ${n.ch}` });
    radio.setAttribute('aria-describedby', detail.id);
    item.append(radio, ' ', label, detail);
    return item;
  }));
  $('network').hidden = false;
}

async function onStartSetup() {
  const button = $('start-setup');
  const status = $('setup-status');
  button.disabled = true;
  $('network').hidden = true;
  $('lamp').hidden = true;
  try {
    const s = settings();
    say(status, 'Getting a claim code from Skyport…');
    state.claimCode = await claimCode(s, state.token);
    state.device = deviceAt(s.device);
    say(status, `Asking the device at ${state.device.address} who it is…`);
    state.deviceId = await state.device.deviceId();
    state.publicKey = await state.device.publicKey();
    await state.device.setClaimCode(state.claimCode);
    state.retrying = false;
    say(status, `Device ${state.deviceId} has your claim code. Looking for Wi-Fi networks…`);
    const networks = await state.device.scan();
    showNetworks(networks);
    say(status, networks.length > 0
      ? `The device sees ${networks.length} Wi-Fi network${networks.length === 1 ? '' : 's'}: pick yours and type its password.`
      : 'The device sees no Wi-Fi network. Move it closer to your router and scan again.');
  } catch (err) {
    sayError(status, err);
  } finally {
    button.disabled = false;
  }
}

async function onRescan() {
  const status = $('setup-status');
  try {
    say(status, 'Looking for Wi-Fi networks…');
    showNetworks(await state.device.scan());
    say(status, 'Pick your network and type its password.');
  } catch (err) {
    sayError(status, err);
  }
}

/**
 * After connect-ap, once a second: is the device in the customer's list and online (it joined,
 * reached Skyport and presented the claim code)? Else, is it answering in listening mode again
 * (it could not join)? Answers 'online', 'join-failed' or 'timeout'.
 */
async function waitForDevice(s, ssid) {
  const status = $('setup-status');
  const started = Date.now();
  // Whether the device stopped answering in listening mode since connect-ap (it went to join).
  let wentQuiet = false;
  for (;;) {
    const elapsed = Date.now() - started;
    const listed = (await listDevices(s, state.token)).find((d) => d.id === state.deviceId);
    if (listed?.online) return 'online';
    if (await state.device.listening(state.deviceId)) {
      if (wentQuiet || elapsed >= JOIN_GRACE_MS) return 'join-failed';
    } else {
      wentQuiet = true;
    }
    if (elapsed >= ONLINE_TIMEOUT_MS) return 'timeout';
    say(status, listed
      ? `The device is in your account; waiting for it to come online… (${Math.round(elapsed / 1000)} s)`
      : `The device is joining ${ssid} and connecting to Skyport… (${Math.round(elapsed / 1000)} s)`);
    await sleep(POLL_MS);
  }
}

async function onConnect(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const status = $('setup-status');
  const picked = form.querySelector('input[name="ssid"]:checked');
  if (!picked) {
    say(status, 'Pick a Wi-Fi network first.', { error: true });
    return;
  }
  const network = state.networks[Number(picked.value)];
  const password = $('wifi-password').value;
  const controls = form.querySelectorAll('input, button');
  controls.forEach((c) => { c.disabled = true; });
  let again = true;
  try {
    const s = settings();
    // Back in listening mode after a failed join: the code goes again, in case the device let it go.
    if (state.retrying) await state.device.setClaimCode(state.claimCode);
    say(status, `Sending the settings of ${network.ssid} to the device…`);
    await state.device.join(state.publicKey, network, password);
    say(status, `The device is joining ${network.ssid}…`);
    const outcome = await waitForDevice(s, network.ssid);
    if (outcome === 'online') {
      again = false;
      $('wifi-password').value = '';
      form.hidden = true;
      say(status, `Your lamp ${state.deviceId} is online on ${network.ssid}, and it is yours.`);
      $('lamp').hidden = false;
    } else if (outcome === 'join-failed') {
      state.retrying = true;
      say(status, `The device could not join ${network.ssid}; check the password and try again.`, { error: true });
    } else {
      say(status, `The device did not come online in your account within ${ONLINE_TIMEOUT_MS / 1000} s. Check that ${network.ssid} reaches the internet, then put the device in listening mode and set it up again.`, { error: true });
    }
  } catch (err) {
    sayError(status, err);
  } finally {
    if (again) controls.forEach((c) => { c.disabled = false; });
  }
}

async function onTurnOn() {
  const status = $('lamp-status');
  const button = $('turn-on');
  button.disabled = true;
  try {
    const value = await callFunction(settings(), state.token, state.deviceId, 'led', 'on');
    say(status, `Turned on: the lamp answered ${value}.`);
  } catch (err) {
    sayError(status, err);
  } finally {
    button.disabled = false;
  }
}

prefill();
$('settings').addEventListener('submit', (event) => event.preventDefault());
$('account').addEventListener('submit', onCreateAccount);
$('start-setup').addEventListener('click', onStartSetup);
$('network').addEventListener('submit', onConnect);
$('rescan').addEventListener('click', onRescan);
$('turn-on').addEventListener('click', onTurnOn);
