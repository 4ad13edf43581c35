/** A holder of a signature in this process, which requests for the same use wait on. */
export interface Gate {
  /** `network endpoint` of the holder: only requests for the same use queue behind it. */
  use: string;
  promise: Promise<void>;
  open: () => void;
}

/** A new gate for `use`, closed until `open` is called. */
export function gate(use: string): Gate {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { use, promise, open };
}

/** Resolves when `promise` settles or after `ms`, whichever comes first, leaving no timer behind. */
export async function waitAtMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms` milliseconds. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
