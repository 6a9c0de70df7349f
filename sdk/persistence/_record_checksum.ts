// Internal: the per-line checksum of stored records.
//
// Every line fileStorage writes (the header and each record or packed row,
// plain or inside a zstd frame) is `<json>\t<checksum>`: the record's JSON, a
// tab, and 8 lowercase hex digits of FNV-1a (32 bits) over the JSON text's
// UTF-16 code units. JSON text never holds a raw tab (JSON.stringify escapes
// it), so the last tab splits the line unambiguously. A byte flipped anywhere
// in a line, inside a string included, then fails the check, and a zstd frame
// is covered whatever the encoder (the wasm one writes no content checksum).
//
// Lines without a tab are from logs written before checksums: they are read
// as before, with no integrity check.

/** FNV-1a over the code units of `text`, as 8 hex digits. */
export function checksum(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/** A record's JSON text with its checksum, without the newline. */
export function sealLine(json: string): string {
  return `${json}\t${checksum(json)}`;
}

/**
 * Split a stored line into its JSON text and the outcome of its check:
 * `true` when the checksum matches, `false` when it does not (or is
 * malformed), `undefined` for a line written without one.
 */
export function openLine(line: string): { readonly json: string; readonly verified: boolean | undefined } {
  const tab = line.lastIndexOf("\t");
  if (tab === -1) return { json: line, verified: undefined };
  const json = line.slice(0, tab);
  const sum = line.slice(tab + 1);
  return { json, verified: /^[0-9a-f]{8}$/.test(sum) && checksum(json) === sum };
}
