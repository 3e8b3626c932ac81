/**
 * The filesystem operations the nvmet model needs, behind one interface so that the same model
 * drives the kernel's configfs and a stand-in directory.
 *
 * Paths are relative to the nvmet root (`<configfs>/nvmet`). Every operation is synchronous: a
 * configfs write is a short syscall into the kernel, and a spec of 1024 namespaces is ~5000 of them.
 */
import { ENOENT, ENOTDIR } from "../errno.ts";
import { errnoOf } from "../errors.ts";
import { listDir, readAttribute, readAttributeIf } from "../host/kfs.ts";
import { makeDir, makeLink, writeAttribute } from "./deno_fs.ts";
import { fileKind, readLinkText, removeDir, removeLink } from "./libc_fs.ts";

/** Synchronous configfs operations, relative to one nvmet root. */
export interface ConfigfsIo {
  /** Absolute path of the nvmet root, for messages. */
  readonly root: string;
  exists(path: string): boolean;
  isDir(path: string): boolean;
  /** Names in a directory (files, directories and links alike), sorted. */
  list(path: string): string[];
  /** An attribute's value without the kernel's trailing newline. */
  read(path: string): string;
  /** As read, or undefined when there is no such attribute (ENOENT, ENOTDIR): an older kernel's. */
  readIf(path: string): string | undefined;
  /** Writes an attribute that must already exist (configfs attributes are never created). */
  write(path: string, value: string): void;
  mkdir(path: string): void;
  rmdir(path: string): void;
  /** Creates `path` as a symlink to `target` (relative to the nvmet root). */
  link(path: string, target: string): void;
  unlink(path: string): void;
  /** The target of a link, relative to the nvmet root (`hosts/<nqn>`). */
  readLink(path: string): string;
}

/** Joins the root and a relative path. */
function abs(root: string, path: string): string {
  return path === "" ? root : `${root}/${path}`;
}

/** Resolves a link's text against the directory holding it, back to a root-relative path. */
function resolveLink(path: string, text: string, root: string): string {
  if (text.startsWith("/")) {
    return text.startsWith(root + "/") ? text.slice(root.length + 1) : text;
  }
  // The kernel answers readlink with a path up to the configfs root and down again
  // ("../../../../nvmet/hosts/<nqn>"): climb past the nvmet root, then keep what follows it.
  const parts = path.split("/").slice(0, -1);
  let above = 0;
  for (const seg of text.split("/")) {
    if (seg === "..") {
      if (parts.length) parts.pop();
      else above++;
    } else if (seg !== "." && seg !== "") {
      if (above > 0) {
        above--;
        continue; // the nvmet directory itself, named on the way back down
      }
      parts.push(seg);
    }
  }
  return parts.join("/");
}

/**
 * A plain directory laid out like configfs, through Deno's file API (the stand-in of the tests
 * builds on it). Not for the kernel's tree: Deno refuses /sys without --allow-all.
 */
export class DirectoryConfigfs implements ConfigfsIo {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  exists(path: string): boolean {
    try {
      Deno.lstatSync(abs(this.root, path));
      return true;
    } catch {
      return false;
    }
  }

  isDir(path: string): boolean {
    try {
      return Deno.lstatSync(abs(this.root, path)).isDirectory;
    } catch {
      return false;
    }
  }

  list(path: string): string[] {
    const names: string[] = [];
    for (const e of Deno.readDirSync(abs(this.root, path))) names.push(e.name);
    return names.sort();
  }

  read(path: string): string {
    return Deno.readTextFileSync(abs(this.root, path)).replace(/\n$/, "");
  }

  readIf(path: string): string | undefined {
    try {
      return this.read(path);
    } catch (err) {
      const n = errnoOf(err);
      if (n === ENOENT || n === ENOTDIR) return undefined;
      throw err;
    }
  }

  write(path: string, value: string): void {
    Deno.writeTextFileSync(abs(this.root, path), value, { create: false });
  }

  mkdir(path: string): void {
    Deno.mkdirSync(abs(this.root, path));
  }

  rmdir(path: string): void {
    Deno.removeSync(abs(this.root, path));
  }

  link(path: string, target: string): void {
    Deno.symlinkSync(abs(this.root, target), abs(this.root, path));
  }

  unlink(path: string): void {
    Deno.removeSync(abs(this.root, path));
  }

  readLink(path: string): string {
    return resolveLink(path, Deno.readLinkSync(abs(this.root, path)), this.root);
  }
}

/**
 * The kernel's nvmet configfs at `root`: what builds the tree (mkdir, symlink, write) through
 * Deno's file API (deno_fs.ts), the rest through libc (libc_fs.ts, host/kfs.ts). An attribute is
 * written with one write(2), never created (no O_CREAT); links get absolute targets, as nvmetcli
 * and the kernel documentation make them.
 */
export class KernelConfigfs implements ConfigfsIo {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  exists(path: string): boolean {
    return fileKind(abs(this.root, path)) !== undefined;
  }

  isDir(path: string): boolean {
    return fileKind(abs(this.root, path)) === "dir";
  }

  list(path: string): string[] {
    return listDir(abs(this.root, path)).sort();
  }

  read(path: string): string {
    return readAttribute(abs(this.root, path)).replace(/\n$/, "");
  }

  readIf(path: string): string | undefined {
    return readAttributeIf(abs(this.root, path))?.replace(/\n$/, "");
  }

  write(path: string, value: string): void {
    // One write(2); an empty value is written as a newline (a zero-length write sets nothing).
    writeAttribute(abs(this.root, path), value === "" ? "\n" : value);
  }

  mkdir(path: string): void {
    makeDir(abs(this.root, path));
  }

  rmdir(path: string): void {
    removeDir(abs(this.root, path));
  }

  link(path: string, target: string): void {
    makeLink(abs(this.root, target), abs(this.root, path));
  }

  unlink(path: string): void {
    removeLink(abs(this.root, path));
  }

  readLink(path: string): string {
    return resolveLink(path, readLinkText(abs(this.root, path)), this.root);
  }
}

export { resolveLink };
