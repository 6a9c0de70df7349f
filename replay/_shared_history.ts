// The derived history of one recorded log, shared by every request recorded
// along it. A request keeps a segment and a length instead of its own copy of
// the history, so a fixture holds O(log) message slots, not O(calls × history),
// and its messages are built only when read (strict replay reads each once).
//
// A segment is the message list of a stretch of the log: appends push onto
// the newest segment; a replacement starts a new segment that shares the
// untouched prefix of the previous one and owns only the messages from the
// replaced position on (in place when no request refers to the newest segment yet).

import { deriveEventMessage, isSurfaceEventType, type Message, type SessionEvent, SurfaceManager } from "../mod.ts";

interface Segment {
  /** The segment whose first `baseLength` messages come before `own`. */
  readonly base: Segment | undefined;
  readonly baseLength: number;
  readonly own: Message[];
}

/** The first `length` messages of `segment`, as a fresh array. */
function materialize(segment: Segment, length: number): Message[] {
  const out = new Array<Message>(length);
  let end = length;
  for (let s: Segment | undefined = segment; end > 0 && s !== undefined; s = s.base) {
    for (let k = s.baseLength; k < end; k++) out[k] = s.own[k - s.baseLength];
    end = Math.min(end, s.baseLength);
  }
  return out;
}

/** Folds a log's surface and hands out the history at any point as a lazy, shared view. */
export class SharedHistory {
  readonly #surface = new SurfaceManager([], 0);
  /** The derived message of each surface node (`null` when it derives none), in surface order. */
  readonly #nodes: (Message | null)[] = [];
  #segment: Segment = { base: undefined, baseLength: 0, own: [] };
  /** How many messages the newest segment's history has. */
  #length = 0;
  /** A request refers to the newest segment: it may only grow. */
  #shared = false;

  /**
   * Fold the next event of the log.
   *
   * @throws {HarnessError} Any surface rejection of `SurfaceManager.commit`.
   */
  commit(event: SessionEvent): void {
    const replaced = this.#surface.commit(event);
    if (!isSurfaceEventType(event.type)) return;
    const message = deriveEventMessage(event);
    if (replaced === undefined) {
      this.#nodes.push(message);
      if (message !== null) {
        this.#segment.own.push(message);
        this.#length++;
      }
      return;
    }
    // The replacement now sits where the shadowed nodes began.
    let at = this.#surface.size - 1;
    while (this.#surface.nodeAt(at) !== event.seq) at--;
    this.#nodes.splice(at, replaced.shadowedSeqs.length, message);
    let kept = 0;
    for (let k = 0; k < at; k++) if (this.#nodes[k] !== null) kept++;
    const tail: Message[] = [];
    for (let k = at; k < this.#nodes.length; k++) if (this.#nodes[k] !== null) tail.push(this.#nodes[k]!);
    const segment = this.#segment;
    if (!this.#shared && kept >= segment.baseLength) {
      segment.own.length = kept - segment.baseLength;
      for (const m of tail) segment.own.push(m);
    } else {
      this.#segment = { base: segment, baseLength: kept, own: tail };
      this.#shared = false;
    }
    this.#length = kept + tail.length;
  }

  /** The history as it stands: read, it builds a fresh array of the messages derived so far. */
  snapshot(): () => Message[] {
    const segment = this.#segment;
    const length = this.#length;
    this.#shared = true;
    return () => materialize(segment, length);
  }
}
