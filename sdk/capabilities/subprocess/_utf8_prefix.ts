// Internal: decode bytes cut at an arbitrary offset without a broken last character.

const decoder = new TextDecoder();

/** Decode `bytes` as UTF-8; when `cut`, drop an incomplete trailing sequence first. */
export function decodeUtf8(bytes: Uint8Array, cut: boolean): string {
  if (!cut) return decoder.decode(bytes);
  let end = bytes.length;
  // Walk back over at most 3 continuation bytes to the lead byte of the last character.
  let i = end - 1;
  while (i >= 0 && end - i <= 4 && (bytes[i] & 0xc0) === 0x80) i--;
  if (i >= 0) {
    const lead = bytes[i];
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (end - i < need) end = i;
  }
  return decoder.decode(bytes.subarray(0, end));
}

/** Collects a stream's bytes up to a cap, counting the rest. */
export class CappedBuffer {
  readonly #cap: number;
  readonly #chunks: Uint8Array[] = [];
  #kept = 0;
  /** Every byte seen. */
  total = 0;

  constructor(cap: number) {
    this.#cap = cap;
  }

  push(chunk: Uint8Array): void {
    this.total += chunk.length;
    const room = this.#cap - this.#kept;
    if (room <= 0) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.#chunks.push(part);
    this.#kept += part.length;
  }

  get truncated(): boolean {
    return this.total > this.#kept;
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.#kept);
    let at = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }

  text(): string {
    return decodeUtf8(this.bytes(), this.truncated);
  }
}
