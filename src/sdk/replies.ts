/**
 * Answers to the cloud's `call` and `get` requests (docs/device-protocol.md, "Function calls" and
 * "Variable reads"). Values are checked here, on the device: a reply the cloud would refuse as
 * bad_payload is never answered, so the REST caller would wait for the call's timeout (408);
 * an `error` reply gives it a 400 device_error with the reason at once.
 */
export type VariableType = 'int32' | 'double' | 'string' | 'bool';
export type VariableValue = number | string | boolean;
export type FunctionHandler = (arg: string) => number | Promise<number>;
export type VariableGetter = () => VariableValue | Promise<VariableValue>;
export interface Variable { type: VariableType; get: VariableGetter }

export type Reply = { id: unknown; return_value: number } | { id: unknown; result: VariableValue } | { id: unknown; error: string };

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;
const isInt32 = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= INT32_MIN && (v as number) <= INT32_MAX;

/** Why `value` is not a `type`, or null when it is. */
function typeProblem(type: VariableType, value: unknown): string | null {
  switch (type) {
    case 'int32': return isInt32(value) ? null : 'the variable is not a 32-bit whole number';
    // JSON has no NaN or Infinity: they would arrive as null.
    case 'double': return typeof value === 'number' && Number.isFinite(value) ? null : 'the variable is not a finite number';
    case 'string': return typeof value === 'string' ? null : 'the variable is not a string';
    case 'bool': return typeof value === 'boolean' ? null : 'the variable is not a boolean';
  }
}

const messageOf = (err: unknown, fallback: string) => (err instanceof Error && err.message ? err.message : fallback);

export async function answerCall(handler: FunctionHandler | undefined, req: Record<string, unknown>): Promise<Reply> {
  if (!handler) return { id: req.id, error: `no function ${String(req.name)}` };
  try {
    const value = await handler(typeof req.arg === 'string' ? req.arg : String(req.arg ?? ''));
    // The cloud takes return values of -2^31 ... 2^31-1 only ("Function calls").
    if (!isInt32(value)) return { id: req.id, error: 'the function did not return a 32-bit whole number' };
    return { id: req.id, return_value: value };
  } catch (err) {
    return { id: req.id, error: messageOf(err, 'the function failed') };
  }
}

export async function answerGet(variable: Variable | undefined, req: Record<string, unknown>): Promise<Reply> {
  if (!variable) return { id: req.id, error: `no variable ${String(req.name)}` };
  try {
    const value = await variable.get();
    const problem = typeProblem(variable.type, value);
    return problem ? { id: req.id, error: problem } : { id: req.id, result: value };
  } catch (err) {
    return { id: req.id, error: messageOf(err, 'the variable could not be read') };
  }
}
