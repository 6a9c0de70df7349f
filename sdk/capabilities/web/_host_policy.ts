// Internal: which hosts web_fetch may reach. Loopback, private, link-local and
// unspecified addresses (and `localhost`) are refused unless an allow entry
// names them; deny entries win over allow entries. Patterns: an exact host,
// or `*.example.com` for its subdomains (not the apex).

const V4_PRIVATE: readonly [number, number][] = [
  [0x7f000000, 8], // 127/8 loopback
  [0x0a000000, 8], // 10/8
  [0xac100000, 12], // 172.16/12
  [0xc0a80000, 16], // 192.168/16
  [0xa9fe0000, 16], // 169.254/16 link-local (cloud metadata)
  [0x64400000, 10], // 100.64/10 shared
  [0x00000000, 8], // 0/8
];

function v4(host: string): number | undefined {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && +p <= 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + +p, 0);
}

/** Whether a host (hostname or IP literal, brackets stripped) is local or private. */
export function isPrivateHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  const n = v4(h);
  if (n !== undefined) return V4_PRIVATE.some(([base, bits]) => (n >>> (32 - bits)) === (base >>> (32 - bits)));
  if (h.includes(":")) {
    if (h === "::" || h === "::1") return true;
    if (/^f[cd][0-9a-f]{2}:/.test(h) || /^fe[89ab][0-9a-f]:/.test(h)) return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (mapped) return isPrivateHost(mapped[1]);
  }
  return false;
}

export function hostMatches(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase().replace(/^\[|\]$/g, "");
  const h = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (p.startsWith("*.")) return h.endsWith(p.slice(1));
  return p === h;
}

/** Why a host is refused, or `undefined` when it may be fetched. */
export function refusal(
  host: string,
  allow: readonly string[] | undefined,
  deny: readonly string[],
): string | undefined {
  if (deny.some((p) => hostMatches(p, host))) return "it is on the deny list";
  const allowed = allow?.some((p) => hostMatches(p, host)) ?? false;
  if (allow !== undefined && !allowed) return "it is not on the allow list";
  if (isPrivateHost(host) && !allowed) return "it is a local or private address (allow it explicitly)";
  return undefined;
}
