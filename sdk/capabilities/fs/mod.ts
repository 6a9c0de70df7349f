/**
 * The file-system seam (`ctx.fs`): the service definition, the local and
 * in-memory providers, and the file tools.
 *
 * @module
 */

export type {
  EditOptions,
  FsEntry,
  FsEntryKind,
  FsService,
  FsStat,
  GlobOptions,
  ReadTextOptions,
  RecursiveOptions,
  TextRead,
  WriteFileOptions,
} from "./fs_service.ts";
export { localFs, type LocalFsOptions } from "./local_fs.ts";
export { memoryFs, type MemoryFsOptions } from "./memory_fs.ts";
export { fsTools, type FsToolsOptions } from "./fs_tools.ts";
