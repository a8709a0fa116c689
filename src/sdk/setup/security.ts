/**
 * Wi-Fi security as the setup protocol writes it: the WICED security codes of Particle's Wi-Fi
 * firmware (`sec` in `scan-ap` and `configure-ap`).
 */
export const SECURITY_CODES = {
  open: 0,
  wep_psk: 0x1,
  wep_shared: 0x8001,
  wpa_tkip: 0x200002,
  wpa_aes: 0x200004,
  wpa_mixed: 0x200006,
  wpa2_aes: 0x400004,
  wpa2_tkip: 0x400002,
  wpa2_mixed: 0x400006,
  wpa2_enterprise_aes: 0x2400004,
  wpa2_enterprise_tkip: 0x2400002,
  wpa2_enterprise_mixed: 0x2400006,
  unknown: -1,
} as const;

/** The kinds a simulated network is described with (`skyport sim --wifi`). */
export type SecurityName = 'open' | 'wep' | 'wpa' | 'wpa2' | 'wpa2-enterprise';
export const SECURITY_NAMES: readonly SecurityName[] = ['open', 'wep', 'wpa', 'wpa2', 'wpa2-enterprise'];

/** What a network of each kind announces in a scan. */
export const SECURITY_BY_NAME: Record<SecurityName, number> = {
  open: SECURITY_CODES.open,
  wep: SECURITY_CODES.wep_psk,
  wpa: SECURITY_CODES.wpa_aes,
  wpa2: SECURITY_CODES.wpa2_aes,
  'wpa2-enterprise': SECURITY_CODES.wpa2_enterprise_aes,
};

const KNOWN = new Set<number>(Object.values(SECURITY_CODES));

export const isSecurityCode = (n: unknown): n is number => typeof n === 'number' && KNOWN.has(n);

/** Whether a code asks for a password: anything but open (and -1, which the app could not tell). */
export const needsPassword = (code: number): boolean => code !== SECURITY_CODES.open && code !== SECURITY_CODES.unknown;
