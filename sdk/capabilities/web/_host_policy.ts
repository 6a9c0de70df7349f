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

const privateV4 = (n: number) => V4_PRIVATE.some(([base, bits]) => (n >>> (32 - bits)) === (base >>> (32 - bits)));

/** The eight 16-bit groups of an IPv6 literal (`::` and a dotted IPv4 tail allowed), or `undefined`. */
function v6(host: string): number[] | undefined {
  let text = host;
  const tail: number[] = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4(dotted[2]);
    if (n === undefined) return undefined;
    tail.push(n >>> 16, n & 0xffff);
    text = dotted[1].endsWith("::") ? dotted[1] : dotted[1].slice(0, -1);
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (
    part: string,
  ) => (part === "" ? [] : part.split(":").map((g) => /^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN));
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  const given = head.length + rest.length + tail.length;
  if (head.some(Number.isNaN) || rest.some(Number.isNaN)) return undefined;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  return [...head, ...new Array(8 - given).fill(0), ...rest, ...tail];
}

function privateV6(g: readonly number[]): boolean {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 7) && (g[7] === 0 || g[7] === 1)) return true; // :: and ::1
  if ((g[0] & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((g[0] & 0xffc0) === 0xfe80 || (g[0] & 0xffc0) === 0xfec0) return true; // link-local, old site-local
  if ((g[0] & 0xff00) === 0xff00) return true; // multicast
  // An IPv4 address inside IPv6 reaches the IPv4 host it carries.
  const carried = carriedV4(g);
  if (carried !== undefined) return privateV4(carried);
  return false;
}

/** Whether a host (hostname or IP literal, brackets stripped) is local or private. */
export function isPrivateHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  const n = v4(h);
  if (n !== undefined) return privateV4(n);
  if (h.includes(":")) {
    const groups = v6(h.replace(/%.*$/, "")); // a zone index names an interface: the address is what counts
    // A literal this parser cannot read is refused rather than let through.
    return groups === undefined || privateV6(groups);
  }
  return false;
}

/**
 * The IPv4 address an IPv6 one carries and reaches, or `undefined`: mapped (`::ffff:a.b.c.d`), translated
 * (`::ffff:0:a.b.c.d`), compatible (`::a.b.c.d`, not `::` or `::1`), NAT64 (`64:ff9b::a.b.c.d`, and
 * `64:ff9b:1::a.b.c.d` in the local-use `64:ff9b:1::/48`) and 6to4 (`2002:AABB:CCDD::/48`, any address of the /48).
 * Only for deny entries and the private check, where reading more addresses as the IPv4 one refuses more; an allow
 * entry is never widened so (see {@linkcode allowKey}).
 */
function carriedV4(g: readonly number[]): number | undefined {
  const v4Of = (hi: number, lo: number) => ((hi << 16) >>> 0) + lo;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4Of(g[6], g[7]); // mapped
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4Of(g[6], g[7]); // translated
  if (zeros(0, 6) && (g[6] !== 0 || g[7] > 1)) return v4Of(g[6], g[7]); // compatible
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] <= 1 && zeros(3, 6)) return v4Of(g[6], g[7]); // NAT64
  if (g[0] === 0x2002) return v4Of(g[1], g[2]); // 6to4
  return undefined;
}

const dotted = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const groupsKey = (g: readonly number[]) => g.map((x) => x.toString(16)).join(":");

/** An IP literal's IPv4 address (in the URL parser's forms: `0x7f.1` is `127.0.0.1`) or IPv6 groups; else `undefined`. */
function ipOf(host: string): { v4: number } | { v6: number[] } | undefined {
  let h = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!h.includes(":")) {
    if (!/^[\dxa-f.]+$/.test(h)) return undefined;
    try {
      h = new URL(`http://${h}/`).hostname; // the URL parser's IPv4 forms: hex, octal, fewer parts
    } catch {
      return undefined;
    }
    const n = v4(h.replace(/\.$/, ""));
    return n === undefined ? undefined : { v4: n };
  }
  const g = v6(h);
  return g === undefined ? undefined : { v6: g };
}

/**
 * An IP literal as an allow entry matches it: the address itself, in one spelling (IPv4 dotted, an IPv4-mapped IPv6
 * address as its IPv4 one, which is the same address, any other IPv6 one as its eight groups). `undefined` for a name.
 */
function allowKey(host: string): string | undefined {
  const ip = ipOf(host);
  if (ip === undefined) return undefined;
  if ("v4" in ip) return dotted(ip.v4);
  const g = ip.v6;
  const mapped = g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
  return mapped ? dotted(((g[6] << 16) >>> 0) + g[7]) : groupsKey(g);
}

/**
 * An IP literal as a deny entry matches it: an IPv6 address that carries an IPv4 one ({@linkcode carriedV4}) as that
 * IPv4 address, so that a denied address is refused in every spelling (`::ffff:93.184.216.34`, `::ffff:5db8:d822`,
 * `2002:5db8:d822::1` are `93.184.216.34`). `undefined` for a name.
 */
function denyKey(host: string): string | undefined {
  const ip = ipOf(host);
  if (ip === undefined) return undefined;
  if ("v4" in ip) return dotted(ip.v4);
  const carried = carriedV4(ip.v6);
  return carried !== undefined ? dotted(carried) : groupsKey(ip.v6);
}

const matcher = (key: (host: string) => string | undefined) => (pattern: string, host: string): boolean => {
  const p = pattern.toLowerCase().replace(/^\[|\]$/g, "");
  const h = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (p.startsWith("*.")) return h.endsWith(p.slice(1));
  const ip = key(p);
  if (ip !== undefined) return ip === key(h);
  return p === h;
};

/**
 * Whether an allow entry matches a host: a name exactly or by `*.`, an IP literal as that address only, in any
 * spelling of it (`::ffff:a.b.c.d` is `a.b.c.d`), never a network: `2002:5db8:d822::1` allows neither the rest of its
 * 6to4 /48 nor `93.184.216.34`.
 */
export const allowMatches: (pattern: string, host: string) => boolean = matcher(allowKey);

/**
 * Whether a deny entry matches a host: as {@linkcode allowMatches}, and an IP literal also as every IPv6 address that
 * carries it (mapped, translated, compatible, NAT64, 6to4), which reaches the same IPv4 host.
 */
export const denyMatches: (pattern: string, host: string) => boolean = matcher(denyKey);

/** Whether a list entry is an IP literal (one a resolved address can match). */
export const isIpEntry = (pattern: string): boolean => ipOf(pattern) !== undefined;

/** Why a host is refused, or `undefined` when it may be fetched. */
export function refusal(
  host: string,
  allow: readonly string[] | undefined,
  deny: readonly string[],
): string | undefined {
  if (deny.some((p) => denyMatches(p, host))) return "it is on the deny list";
  const allowed = allow?.some((p) => allowMatches(p, host)) ?? false;
  if (allow !== undefined && !allowed) return "it is not on the allow list";
  if (isPrivateHost(host) && !allowed) return "it is a local or private address (allow it explicitly)";
  return undefined;
}
