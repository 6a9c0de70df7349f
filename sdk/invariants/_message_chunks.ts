// The ASSISTANT_MESSAGE_CHUNKS_MISMATCH check of `checkInvariants`: an appended assistant message against the
// model stream its `sourceEventSeqs` name.
//
// The agent loop logs each chunk of an attempt as it streams, folds the same logged chunks with a `BlockAssembler`,
// and appends the assistant message with `sourceEventSeqs` = that attempt's chunk seqs (a failed attempt's chunks are
// in no message's list). The message holds `blocks()` of the fold, its `usage`, and the finish's replay state; a
// cancelled stream gives an `interrupted` message of `interruptedBlocks()` (no usage). So the check folds the named
// chunks with the same class, in the order named, and compares. The fold takes a closed block as its first block-end
// carries it, and so does the message: the deltas of a closed block are not held to its block-end, since the stream
// protocol does not ask an adapter for that (one that trims the text or re-serialises the arguments it streamed
// sends a valid stream, and the loop logs the block-end's block). It reads only the named events: O(chunks of the
// message + its content), with nothing kept between messages.

import { BlockAssembler } from "../llm/block_assembler.ts";
import { jsonEqual } from "../session/_json_equal.ts";
import type { SessionEvent } from "../session/session_events.ts";

/**
 * How an appended assistant message differs from the stream its `sourceEventSeqs` name, fact first, or
 * `undefined` when it does not. A message that names no chunk is not checked: no `sourceEventSeqs` (no source
 * recorded), or an empty list (a message derived from no event, which `Session.append` allows on
 * `assistant/message`; the loop always names at least its attempt's `finish`).
 *
 * Compared: each named seq is an `assistant/chunk` of the message's own step; the content equals what the chunks
 * assemble (`interruptedBlocks()` for an `interrupted` message, else `blocks()`: a closed block as its first
 * `block-end` carries it, whatever its deltas streamed); a message that is not interrupted does not name a stream
 * that ended with an `error` or `aborted` finish (the loop retries or fails such an attempt, and logs no message for
 * it); and, where both the message and the chunks carry them, the usage and the replay state.
 */
export function messageChunksMismatch(
  events: readonly SessionEvent[],
  event: SessionEvent<"assistant/message">,
): string | undefined {
  const sources: unknown = event.sourceEventSeqs;
  if (!Array.isArray(sources) || sources.length === 0) return undefined;
  const data = event.data;
  const assembler = new BlockAssembler();
  for (const seq of sources) {
    const chunk = typeof seq === "number" ? events[seq] : undefined;
    if (chunk?.type !== "assistant/chunk" || typeof chunk.data !== "object" || chunk.data === null) {
      return `assistant/message names seq ${seq} in sourceEventSeqs, which is not an assistant/chunk`;
    }
    if (chunk.data.turn !== data.turn || chunk.data.step !== data.step) {
      return `assistant/message of step ${data.turn}.${data.step} names the chunk at seq ${seq}, of step ${chunk.data.turn}.${chunk.data.step}`;
    }
    assembler.push(chunk.data.chunk);
  }
  const interrupted = data.interrupted === true;
  const finish = assembler.finish.kind;
  if (!interrupted && (finish === "error" || finish === "aborted")) {
    return `assistant/message is not interrupted but its chunks end with an ${finish} finish`;
  }
  const expected = interrupted ? assembler.interruptedBlocks() : assembler.blocks();
  const content: readonly unknown[] = Array.isArray(data.message?.content) ? data.message.content : [];
  if (content.length !== expected.length) {
    return `assistant/message holds ${content.length} content block(s) where its chunks assemble ${expected.length}`;
  }
  for (let i = 0; i < content.length; i++) {
    if (!jsonEqual(content[i], expected[i])) {
      return `assistant/message content block ${i} differs from the block its chunks assemble`;
    }
  }
  if (data.usage !== undefined && assembler.usage !== undefined && !jsonEqual(data.usage, assembler.usage)) {
    return "assistant/message usage differs from its chunks' usage";
  }
  const state = data.message?.source?.kind === "model" ? data.message.source.replayState : undefined;
  const streamed = state === undefined ? undefined : assembler.replayState;
  if (streamed !== undefined && !jsonEqual(state, streamed)) {
    return "assistant/message replay state differs from its chunks' finish";
  }
  return undefined;
}
