/**
 * A file descriptor this process owns (a socket, a device, an eventfd): one close, idempotent,
 * also through `using`. The classes that wrap an fd (the netlink and ICMP sockets, the NVMe admin
 * device, the kernel log watch, the wait canceller) extend or hold it instead of each writing
 * their own close.
 */
import { libc } from "../ffi/libc.ts";

/** An open fd, closed once by close() or disposal; `fd` is -1 once closed. */
export class OwnedFd implements Disposable {
  #fd: number;

  /** Takes ownership of `fd` (a negative value owns nothing: closed from the start). */
  constructor(fd: number) {
    this.#fd = fd < 0 ? -1 : fd;
  }

  /** The descriptor, or -1 once closed. */
  get fd(): number {
    return this.#fd;
  }

  /** Whether the fd is still open. */
  get isOpen(): boolean {
    return this.#fd >= 0;
  }

  /** Closes the fd; idempotent. */
  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    libc().close(fd);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
