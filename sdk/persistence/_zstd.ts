// zstd, one frame at a time: native where the runtime has it (`node:zlib` on
// Deno and Node >= 22.15, Bun's built-ins), else `@bokuweb/zstd-wasm`, loaded
// and initialised once on first use. This file and `_fs.ts` are the only
// places in sdk/ that reach `node:` built-ins.

interface ZstdImpl {
  readonly name: string;
  compress(bytes: Uint8Array, level: number): Uint8Array;
  decompress(frame: Uint8Array): Uint8Array;
}

type NativeZlib = {
  zstdCompressSync?: (
    bytes: Uint8Array,
    options?: { params?: Record<number, number>; pledgedSrcSize?: number },
  ) => Uint8Array;
  zstdDecompressSync?: (bytes: Uint8Array) => Uint8Array;
  constants: Record<string, number>;
};
type BunZstd = {
  zstdCompressSync?: (bytes: Uint8Array, options?: { level?: number }) => Uint8Array;
  zstdDecompressSync?: (bytes: Uint8Array) => Uint8Array;
};

let impl: Promise<ZstdImpl> | undefined;

// `node:zlib` is imported on first use (a static import costs start-up time on
// every process that never compresses anything).
async function nativeImpl(): Promise<ZstdImpl | undefined> {
  const z = (await import("node:zlib").catch(() => undefined)) as unknown as NativeZlib | undefined;
  if (z !== undefined && typeof z.zstdCompressSync === "function" && typeof z.zstdDecompressSync === "function") {
    const compress = z.zstdCompressSync;
    const decompress = z.zstdDecompressSync;
    const level = z.constants.ZSTD_c_compressionLevel;
    const checksum = z.constants.ZSTD_c_checksumFlag;
    return {
      name: "node:zlib",
      // The pledged size puts the content size in the frame header, which the wasm decoder needs.
      compress: (bytes, lvl) =>
        compress(bytes, {
          pledgedSrcSize: bytes.length,
          params: level === undefined || checksum === undefined ? {} : { [level]: lvl, [checksum]: 1 },
        }),
      decompress: (frame) => decompress(frame),
    };
  }
  const bun = (globalThis as { Bun?: BunZstd }).Bun;
  if (typeof bun?.zstdCompressSync === "function" && typeof bun.zstdDecompressSync === "function") {
    const compress = bun.zstdCompressSync;
    const decompress = bun.zstdDecompressSync;
    return {
      name: "bun",
      compress: (bytes, lvl) => compress(bytes, { level: lvl }),
      decompress: (frame) => decompress(frame),
    };
  }
  return undefined;
}

let wasmLoaded: Promise<ZstdImpl> | undefined;

/** The wasm implementation, loaded and `init()`ed once per process. */
function wasmImpl(): Promise<ZstdImpl> {
  return wasmLoaded ??= loadWasm().catch((error) => {
    wasmLoaded = undefined;
    throw error;
  });
}

// Only Node < 22.15 needs the wasm build (Deno and Bun have native zstd). Its
// specifier is not a literal so that bundlers leave it out: its default entry
// needs `fs/promises`, which breaks a `platform=neutral` bundle, and an edge
// bundle never writes files. A bundled Node app keeps it in node_modules.
const WASM_PACKAGE = "@bokuweb/zstd-wasm";

async function loadWasm(): Promise<ZstdImpl> {
  const wasm = (await import(WASM_PACKAGE)) as typeof import("@bokuweb/zstd-wasm");
  await wasm.init();
  return {
    name: "@bokuweb/zstd-wasm",
    compress: (bytes, lvl) => wasm.compress(bytes, lvl),
    // Frames without a content size (other encoders) need a buffer guess: grow it until the frame fits.
    decompress: (frame) => {
      for (let heap = 1 << 20;; heap *= 8) {
        try {
          return wasm.decompress(frame, { defaultHeapSize: heap });
        } catch (error) {
          if (heap >= 1 << 29) throw error;
        }
      }
    },
  };
}

/** The zstd implementation of this runtime, ready to use. */
export function zstd(): Promise<ZstdImpl> {
  return impl ??= nativeImpl().then((native) => native ?? wasmImpl()).catch((error) => {
    impl = undefined;
    throw error;
  });
}

/** Force the wasm implementation (tests compare the two). */
export function zstdWasm(): Promise<ZstdImpl> {
  return wasmImpl();
}

const MAGIC = 0xfd2fb528;

function u32(bytes: Uint8Array, at: number): number {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}

/**
 * The end offset of the zstd frame (or skippable frame) starting at `at`, or
 * -1 when the bytes there are not a complete frame. Walks the frame header
 * and block headers (RFC 8878) without decompressing.
 */
export function frameEnd(bytes: Uint8Array, at: number): number {
  const n = bytes.length;
  if (at + 4 > n) return -1;
  const magic = u32(bytes, at);
  if ((magic & 0xfffffff0) === 0x184d2a50) {
    if (at + 8 > n) return -1;
    const end = at + 8 + u32(bytes, at + 4);
    return end <= n ? end : -1;
  }
  if (magic !== MAGIC || at + 5 > n) return -1;
  const fhd = bytes[at + 4];
  const fcsFlag = fhd >> 6;
  const singleSegment = (fhd >> 5) & 1;
  const checksum = (fhd >> 2) & 1;
  const dictFlag = fhd & 3;
  if ((fhd >> 3) & 1) return -1; // reserved bit
  let p = at + 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][dictFlag] +
    [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag];
  for (;;) {
    if (p + 3 > n) return -1;
    const header = bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16);
    const last = header & 1;
    const type = (header >> 1) & 3;
    const size = header >> 3;
    if (type === 3) return -1;
    p += 3 + (type === 1 ? 1 : size);
    if (p > n) return -1;
    if (last) break;
  }
  p += checksum ? 4 : 0;
  return p <= n ? p : -1;
}

/** The offset of the next zstd magic number at or after `from`, or -1. */
export function nextMagic(bytes: Uint8Array, from: number): number {
  for (let i = bytes.indexOf(0x28, from); i !== -1 && i + 4 <= bytes.length; i = bytes.indexOf(0x28, i + 1)) {
    if (u32(bytes, i) === MAGIC) return i;
  }
  return -1;
}
