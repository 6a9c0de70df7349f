// Internal: request bodies — JSON parsing and zod validation into problems.

import { z } from "zod";
import { HttpProblem } from "./_problem.ts";
import { isValidSessionId, SESSION_ID_RULE } from "./_session_id.ts";

const textBlock = z.strictObject({ type: z.literal("text"), text: z.string() });
const imageBlock = z.strictObject({
  type: z.literal("image"),
  mediaType: z.string().regex(/^image\/[\w.+-]+$/),
  data: z.string().optional(),
  // Only web URLs and inline data: never a local file (a file: URL would be logged and sent on as is).
  url: z.url({ protocol: /^(https?|data)$/, error: "Image URLs must be https:, http: or data: URLs" }).optional(),
}).refine((b) => (b.data === undefined) !== (b.url === undefined), { message: "Give exactly one of data and url" });

const content = z.union([z.string().min(1), z.array(z.union([textBlock, imageBlock])).min(1)]);
const sessionId = z.string().refine(isValidSessionId, { message: SESSION_ID_RULE });
const toolName = z.string().min(1).max(128);

/** POST /sessions */
export const createSessionBody = z.strictObject({
  id: sessionId.optional(),
  provider: z.string().min(1).max(128).optional(),
  model: z.string().min(1).max(256).optional(),
  system: z.string().max(200_000).optional(),
  tools: z.array(toolName).max(1000).optional(),
  reasoningEffort: z.enum(["minimal", "low", "medium", "high", "max"]).optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.int().positive().optional(),
});
export type CreateSessionBody = z.infer<typeof createSessionBody>;

/** POST /sessions/:id/messages */
export const messageBody = z.strictObject({
  mode: z.enum(["followup", "steer", "inject"]).default("followup"),
  content,
  wait: z.boolean().default(false),
});

/** POST /sessions/:id/cancel */
export const cancelBody = z.strictObject({ keepInbox: z.boolean().default(false) });

/** POST /sessions/:id/wake */
export const wakeBody = z.strictObject({ wait: z.boolean().default(false) });

/** POST /sessions/:id/fork */
export const forkBody = z.strictObject({
  boundary: z.int().nonnegative().optional(),
  id: sessionId.optional(),
});

/** POST /sessions/:id/approvals/:callId */
export const approvalBody = z.strictObject({ decision: z.enum(["allow", "reject"]) });

function pathOf(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : out === "" ? String(key) : `.${String(key)}`;
  return out;
}

/**
 * Read a body as text, refusing more than `maxBytes`: at once from
 * `Content-Length`, else while streaming (the read stops at the limit).
 */
async function readLimited(request: Request, maxBytes: number): Promise<string> {
  const tooLarge = () => new HttpProblem(413, "BODY_TOO_LARGE", `The request body is larger than ${maxBytes} bytes`);
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw tooLarge();
  if (request.body === null) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  // The client went away mid-upload (a reset, an aborted request): its request, not a fault of the server.
  const read = () =>
    reader.read().catch((cause: unknown) => {
      throw new HttpProblem(400, "BODY_INCOMPLETE", "The request body ended before it was complete", { cause });
    });
  for (let r = await read(); !r.done; r = await read()) {
    size += r.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(r.value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new HttpProblem(400, "INVALID_JSON", "The request body is not valid UTF-8", { cause });
  }
}

/**
 * Parse and validate a JSON body of at most `maxBytes`. An empty body counts
 * as `{}`, so routes whose fields are all optional accept a bare POST.
 */
export async function readBody<T extends z.ZodType>(
  request: Request,
  schema: T,
  maxBytes: number,
): Promise<z.output<T>> {
  const text = await readLimited(request, maxBytes);
  let value: unknown = {};
  if (text.trim() !== "") {
    const type = request.headers.get("content-type") ?? "";
    if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
      throw new HttpProblem(415, "UNSUPPORTED_MEDIA_TYPE", "Request bodies must be sent as application/json");
    }
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new HttpProblem(400, "INVALID_JSON", "The request body is not valid JSON", { cause });
    }
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const errors = result.error.issues.map((issue) => ({ path: pathOf(issue.path), message: issue.message }));
    throw new HttpProblem(
      422,
      "INVALID_BODY",
      `The request body is invalid: ${errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; ")}`,
      { errors },
    );
  }
  return result.data;
}
