/**
 * Internal: resolving plugin module specifiers against the file that names them.
 *
 * @module
 */

const URL_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]+:/; // two letters or more: `C:` is a drive
const WINDOWS_ABSOLUTE = /^(?:[A-Za-z]:[\\/]|\\\\)/;

function escapePath(path: string): string {
  return path.replace(/%/g, "%25").replace(/#/g, "%23").replace(/\?/g, "%3F");
}

/**
 * The `file:` URL of a path (POSIX or Windows), or the URL itself when `path`
 * already is one. A relative path needs `cwd`; without it the result is `undefined`.
 */
export function fileUrlOf(path: string, cwd?: string): URL | undefined {
  if (URL_SCHEME.test(path)) return new URL(path);
  if (WINDOWS_ABSOLUTE.test(path)) {
    const slashed = path.replace(/\\/g, "/");
    return new URL(escapePath(slashed.startsWith("//") ? `file:${slashed}` : `file:///${slashed}`));
  }
  if (path.startsWith("/")) return new URL(`file://${escapePath(path)}`);
  if (cwd === undefined) return undefined;
  const base = fileUrlOf(cwd.endsWith("/") || cwd.endsWith("\\") ? cwd : `${cwd}/`);
  return base === undefined ? undefined : new URL(escapePath(path.replace(/\\/g, "/")), base);
}

/**
 * Resolve a relative directory (`sessions`, `./sessions`, `../data`) against `base`, the URL of the file
 * naming it, to a file system path; an absolute path, a URL, or a `base` that is not a `file:` URL keeps it as
 * written.
 */
export function resolveDirectory(dir: string, base: URL): string {
  if (base.protocol !== "file:" || fileUrlOf(dir) !== undefined || dir === "") return dir;
  const url = new URL(escapePath(dir.replace(/\\/g, "/")), base);
  const path = decodeURIComponent(url.pathname);
  if (url.host !== "") return `//${url.host}${path}`; // a UNC share
  return /^\/[A-Za-z]:\//.test(path) ? path.slice(1) : path; // a Windows drive
}

/**
 * Resolve a relative specifier (`./x.ts`, `../x.ts`) against `base`, the URL
 * of the file naming it; bare names, `npm:`/`jsr:` specifiers, URLs and
 * absolute paths are kept as written.
 */
export function resolvePluginSpecifier(specifier: string, base: URL): string {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return specifier;
  return new URL(escapePath(specifier), base).href;
}
