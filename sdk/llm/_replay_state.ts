// Replay state is adapter-private: a message's `replayState` reaches only the
// adapter that serves the message's provider. The runtime applies this rule
// before every adapter call, and strict replay applies it to the recorded
// history so that it compares what the adapter was actually sent.

import type { Message } from "./messages.ts";

/**
 * Whether `message` carries replay state that the adapter about to be called must not see:
 * `serves(provider)` tells whether that adapter serves the message's provider.
 */
export function hasForeignReplayState(message: Message, serves: (provider: string) => boolean): boolean {
  return message.source.kind === "model" && message.source.replayState !== undefined &&
    !serves(message.source.provider);
}

// One copy per message, so consecutive requests share the copies as they share
// the originals (a strict comparison then matches them by identity).
const stripped = new WeakMap<Message, Message>();

function withoutReplayState(message: Message): Message {
  let copy = stripped.get(message);
  if (copy === undefined) {
    const { replayState: _dropped, ...source } = message.source as Extract<Message["source"], { kind: "model" }>;
    copy = { ...message, source } as Message;
    if (Object.isFrozen(message)) {
      Object.freeze(source);
      Object.freeze(copy);
    }
    stripped.set(message, copy);
  }
  return copy;
}

/**
 * `messages` without the replay state the adapter about to be called must not see
 * ({@linkcode hasForeignReplayState}); `messages` itself when no message from `from` on carries any
 * (the caller knows the messages before `from` carry none).
 */
export function withoutForeignReplayState(
  messages: readonly Message[],
  serves: (provider: string) => boolean,
  from = 0,
): readonly Message[] {
  let first = -1;
  for (let i = from; i < messages.length; i++) {
    if (hasForeignReplayState(messages[i], serves)) {
      first = i;
      break;
    }
  }
  if (first < 0) return messages;
  const out = messages.slice();
  for (let i = first; i < out.length; i++) {
    if (hasForeignReplayState(out[i], serves)) out[i] = withoutReplayState(out[i]);
  }
  return out;
}
