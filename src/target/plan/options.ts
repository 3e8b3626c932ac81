/** What planning needs besides the tree and the spec. */
export interface PlanOptions {
  /** Remove objects and links the spec does not mention. */
  prune?: boolean;
  /** Reads a secret for a host attribute (DH-HMAC-CHAP key files); injected for tests. */
  readSecret?: (file: string) => string;
  /** Reads the live value of a secret attribute, to compare without showing it. */
  readLiveSecret?: (path: string) => string | undefined;
}
