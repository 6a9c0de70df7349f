// Internal: a growable byte buffer that SSE frames are written into as UTF-8,
// with a JSON string writer.
//
// A live feed (`_live_feed.ts`) writes each frame straight into the bytes of
// the segment it is gathering: no string per frame, no join and no
// TextEncoder pass when the segment is sealed, and less for the collector.
// `jsonString` writes exactly the UTF-8 bytes of `JSON.stringify(text)`:
// `"` and `\` escaped, `\b \f \n \r \t`, other code units below U+0020 and
// lone surrogates as `\u` and four lowercase hex digits, everything else as is
// (`_frame_buffer_test.ts` checks it on arbitrary UTF-16 strings).

const encoder = new TextEncoder();
/** Text longer than this goes to the runtime's encoder. */
const LONG_TEXT = 64;
const HEX = "0123456789abcdef";

/** Bytes written one frame after another; `take()` hands them over and starts again. */
export class FrameBuffer {
  #bytes: Uint8Array;
  #pos = 0;
  #taken = 0;

  constructor(capacity = 65536) {
    this.#bytes = new Uint8Array(capacity);
  }

  /** How many times `take()` was called: positions from `length` hold until the next one. */
  get taken(): number {
    return this.#taken;
  }

  /** Bytes written since the last `take()`. */
  get length(): number {
    return this.#pos;
  }

  /**
   * Room for `n` more bytes: the array to write them into from `length` on,
   * with the plain writers below; then `commit()` the end.
   */
  reserve(n: number): Uint8Array {
    const need = this.#pos + n;
    if (need > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(need, this.#bytes.length * 2));
      grown.set(this.#bytes.subarray(0, this.#pos));
      this.#bytes = grown;
    }
    return this.#bytes;
  }

  /** The bytes up to `end` (at most what was reserved) are written. */
  commit(end: number): void {
    this.#pos = end;
  }

  /**
   * Any text as UTF-8 (as TextEncoder writes it): short ASCII text without a
   * call out, longer text (an event's JSON) by the runtime's encoder, which
   * beats a loop in JavaScript past a few dozen characters.
   */
  text(text: string): void {
    const n = text.length;
    if (n <= LONG_TEXT) {
      const p = writeAscii(this.reserve(n), this.#pos, text);
      if (p >= 0) {
        this.#pos = p;
        return;
      }
    }
    // TextEncoder writes at most three bytes per UTF-16 code unit.
    const room = this.reserve(n * 3);
    this.#pos += encoder.encodeInto(text, room.subarray(this.#pos)).written;
  }

  /** A finite number as JSON writes it. */
  number(value: number): void {
    this.#pos = writeNumber(this.reserve(NUMBER_MAX), this.#pos, value);
  }

  /** The UTF-8 bytes of `JSON.stringify(text)`. */
  jsonString(text: string): void {
    this.#pos = writeJsonString(this.reserve(jsonStringMax(text)), this.#pos, text);
  }

  /** The bytes from `start` to `end` (earlier `length`s since the last `take()`), written again at the end. */
  repeat(start: number, end: number): void {
    const b = this.reserve(end - start);
    b.copyWithin(this.#pos, start, end);
    this.#pos += end - start;
  }

  /** The bytes written so far (a copy); the buffer starts empty again. */
  take(): Uint8Array {
    const out = this.#bytes.slice(0, this.#pos);
    this.#pos = 0;
    this.#taken++;
    return out;
  }
}

// Plain writers into a reserved array: each takes the position and returns the next.

/**
 * The most bytes `writeNumber` writes: `String()` of a finite number is at most
 * 25 characters — a sign, "0.", five zeros and 17 digits (`-0.0000010059214244312041`);
 * the exponent form is at most 24 (`-1.2345678901234567e-308`).
 */
export const NUMBER_MAX = 25;

/** The most bytes `writeJsonString` writes for `text`: six per code unit (`\u001f`), and the quotes. */
export function jsonStringMax(text: string): number {
  return text.length * 6 + 2;
}

/** Copy `src` in. */
export function writeBytes(b: Uint8Array, p: number, src: Uint8Array): number {
  const n = src.length;
  if (n > 24) {
    b.set(src, p);
    return p + n;
  }
  for (let i = 0; i < n; i++) b[p++] = src[i];
  return p;
}

/** ASCII `text`, one byte per character; `-1` (with bytes written past `p`) if it is not all ASCII. */
function writeAscii(b: Uint8Array, p: number, text: string): number {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return -1;
    b[p++] = c;
  }
  return p;
}

/** A finite number as JSON writes it. */
export function writeNumber(b: Uint8Array, p: number, value: number): number {
  // String() is what JSON writes for a finite number (-0 is "0"), and ASCII; V8 and JSC cache recent ones.
  const text = "" + value;
  const n = text.length;
  for (let i = 0; i < n; i++) b[p++] = text.charCodeAt(i);
  return p;
}

// The letter after the backslash of JSON's two-character escapes, by character code (0: none).
const SHORT_ESCAPE = new Uint8Array(0x5d);
SHORT_ESCAPE[0x22] = 0x22; // "
SHORT_ESCAPE[0x5c] = 0x5c; // backslash
SHORT_ESCAPE[0x08] = 0x62; // b
SHORT_ESCAPE[0x0c] = 0x66; // f
SHORT_ESCAPE[0x0a] = 0x6e; // n
SHORT_ESCAPE[0x0d] = 0x72; // r
SHORT_ESCAPE[0x09] = 0x74; // t

/** The UTF-8 bytes of `JSON.stringify(text)`; room for `jsonStringMax(text)` bytes. */
export function writeJsonString(b: Uint8Array, p: number, text: string): number {
  b[p++] = 0x22;
  p = writeJsonStringBody(b, p, text);
  b[p++] = 0x22;
  return p;
}

/**
 * The UTF-8 bytes of `JSON.stringify(text)` without its quotes: what goes
 * between them, so that texts written one after another make the JSON string
 * of their concatenation.
 */
export function writeJsonStringBody(b: Uint8Array, p: number, text: string): number {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20 && c !== 0x22 && c !== 0x5c) {
        b[p++] = c;
        continue;
      }
      // A control character, `"` or a backslash (all below 0x5d): its two-character escape, else \u00XX.
      b[p++] = 0x5c;
      const short = SHORT_ESCAPE[c];
      if (short !== 0) b[p++] = short;
      else p = unicodeEscape(b, p, c);
    } else if (c < 0x800) {
      b[p++] = 0xc0 | (c >> 6);
      b[p++] = 0x80 | (c & 0x3f);
    } else if (c < 0xd800 || c > 0xdfff) {
      b[p++] = 0xe0 | (c >> 12);
      b[p++] = 0x80 | ((c >> 6) & 0x3f);
      b[p++] = 0x80 | (c & 0x3f);
    } else {
      const d = c <= 0xdbff && i + 1 < n ? text.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        // A surrogate pair: one code point, four bytes.
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        b[p++] = 0xf0 | (cp >> 18);
        b[p++] = 0x80 | ((cp >> 12) & 0x3f);
        b[p++] = 0x80 | ((cp >> 6) & 0x3f);
        b[p++] = 0x80 | (cp & 0x3f);
        i++;
      } else {
        // A lone surrogate: JSON.stringify escapes it.
        b[p++] = 0x5c;
        p = unicodeEscape(b, p, c);
      }
    }
  }
  return p;
}

/** `u` and four lowercase hex digits of `c`, after a backslash already written. */
function unicodeEscape(b: Uint8Array, p: number, c: number): number {
  b[p++] = 0x75;
  b[p++] = HEX.charCodeAt(c >> 12);
  b[p++] = HEX.charCodeAt((c >> 8) & 0xf);
  b[p++] = HEX.charCodeAt((c >> 4) & 0xf);
  b[p++] = HEX.charCodeAt(c & 0xf);
  return p;
}
