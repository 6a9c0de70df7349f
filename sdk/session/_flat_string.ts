// Internal: strings the session log keeps for good, made flat.
//
// A string built by `+=` (a block's text from its deltas) or by a library's
// concatenation (Node's `crypto.randomUUID()` joins 20 pieces) is, on V8 and
// JavaScriptCore, a tree with one node per piece: a cons string, a rope. Kept
// in the log, the whole tree stays alive, and the garbage collector copies and
// marks every node (on Node they were a quarter of the objects a logged chunk
// retains: bench/PROFILE.md). Reading a character makes the engine flatten the
// string in place: the root then holds one flat copy and the inner nodes die
// young. The value and identity of the string do not change.

// The read goes to a module variable, so that an optimising compiler cannot drop it as unused.
let touched = 0;

/**
 * `text`, flattened in place on engines that build strings as trees.
 *
 * @param text Any string.
 * @returns The same string.
 */
export function flatString(text: string): string {
  if (text.length > 0) touched ^= text.charCodeAt(0);
  return text;
}

/** A fresh id from `crypto.randomUUID()`, flat (see {@linkcode flatString}). */
export function randomId(): string {
  return flatString(crypto.randomUUID());
}
