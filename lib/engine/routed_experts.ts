/**
 * Routed experts (R3): for each token the engine forwarded, the experts each MoE layer of the
 * model routed it to — what a trainer replays so its routers pick what the engine's did. A row is
 * one position: `layers × topK` expert ids, layer by layer (dense layers as zeros, as the engines
 * report them). The engines send rows `[start, seqlen - 1)`: the last sampled token is never
 * forwarded.
 *
 * The wire forms: SGLang's `meta_info.routed_experts`, base64 of little-endian int32; vLLM's
 * `routed_experts`, base64 of a `.npy` file (uint8, uint16 or int32). Rows are kept in the
 * smallest unsigned type that holds the model's expert ids ({@linkcode expertDtype}).
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";

/** The mixture-of-experts shape of the served model, read from its `config.json`. */
export interface MoeShape {
  /** Layers a row covers: all the model's decoder layers. */
  readonly layers: number;
  /** Experts each MoE layer routes a token to. */
  readonly topK: number;
  /** Experts in each MoE layer: ids are `0 .. experts - 1`. */
  readonly experts: number;
  /** The layers without experts, whose entries the engine reports as zeros. */
  readonly denseLayers: readonly number[];
}

/** The element types rows are kept and exported in. */
export type ExpertDtype = "uint8" | "uint16" | "int16" | "int32";

/** Expert ids of rows, row-major, `layers × topK` a row. */
export type ExpertValues = Uint8Array | Uint16Array | Int16Array | Int32Array;

/** Rows of routed experts the engine reported for positions `start .. start + rows`. */
export interface ExpertRows {
  /** The first position the rows cover (in the prompt ++ output the engine read). */
  readonly start: number;
  readonly rows: number;
  readonly values: ExpertValues;
  /** SHA-256 (hex) of the values' bytes, when they were hashed where they were read. */
  readonly digest?: string;
}

/** The smallest unsigned type that holds every expert id of `shape`. */
export function expertDtype(shape: Pick<MoeShape, "experts">): "uint8" | "uint16" | "int32" {
  return shape.experts <= 0x100 ? "uint8" : shape.experts <= 0x10000 ? "uint16" : "int32";
}

/** Bytes an element of `dtype` takes. */
export function dtypeBytes(dtype: ExpertDtype): number {
  return dtype === "uint8" ? 1 : dtype === "int32" ? 4 : 2;
}

/** An empty array of `dtype` for `length` values. */
export function expertValues(dtype: ExpertDtype, length: number): ExpertValues {
  switch (dtype) {
    case "uint8":
      return new Uint8Array(length);
    case "uint16":
      return new Uint16Array(length);
    case "int16":
      return new Int16Array(length);
    case "int32":
      return new Int32Array(length);
  }
}

/** Values per row: `layers × topK`. */
export function rowWidth(shape: Pick<MoeShape, "layers" | "topK">): number {
  return shape.layers * shape.topK;
}

/**
 * The engine's routed experts are missing, or do not fit the model's shape or the turn: the turn
 * cannot be trained with R3, so it is not recorded.
 */
export class RoutesFormatError extends Error implements CodedError {
  readonly code = "engine_routes" as const;
  constructor(message: string) {
    super(message);
    this.name = "RoutesFormatError";
  }
}

/**
 * SGLang's `meta_info.routed_experts` (base64 of little-endian int32 values) as rows starting at
 * `start`, in `dtype`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeSglangRoutes } from "./routed_experts.ts";
 * const ids = new Int32Array([1, 2, 3, 4]);
 * const base64 = btoa(String.fromCharCode(...new Uint8Array(ids.buffer)));
 * const rows = decodeSglangRoutes(base64, { layers: 1, topK: 2, experts: 8 }, 5, "uint8");
 * assert.deepEqual({ ...rows, values: [...rows.values] }, { start: 5, rows: 2, values: [1, 2, 3, 4] });
 * ```
 * @throws {RoutesFormatError} when the bytes are not whole rows, or an id is out of range.
 */
export function decodeSglangRoutes(
  base64: string,
  shape: Pick<MoeShape, "layers" | "topK" | "experts">,
  start: number,
  dtype: ExpertDtype,
): ExpertRows {
  const bytes = fromBase64(base64);
  const width = rowWidth(shape);
  if (bytes.length % (4 * width) !== 0) {
    throw new RoutesFormatError(
      `routed_experts holds ${bytes.length} bytes, not whole rows of ${width} int32 values`,
    );
  }
  const ints = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  return { start, rows: ints.length / width, values: converted(ints, shape, dtype) };
}

/**
 * A `.npy` file's array of expert ids (vLLM's `routed_experts`, base64 decoded): its shape and
 * values, in `dtype`, checked against the model's shape (`rows × layers × topK`).
 *
 * @throws {RoutesFormatError} for a file that is not a C-ordered `.npy` of an integer type, of
 * another shape, or with an id out of range.
 */
export function decodeNpyRoutes(
  bytes: Uint8Array,
  shape: Pick<MoeShape, "layers" | "topK" | "experts">,
  start: number,
  dtype: ExpertDtype,
): ExpertRows {
  const array = readNpy(bytes);
  const [rows, layers, topK] = array.shape;
  if (array.shape.length !== 3 || layers !== shape.layers || topK !== shape.topK) {
    throw new RoutesFormatError(
      `routed_experts has shape (${
        array.shape.join(", ")
      }), not (rows, ${shape.layers}, ${shape.topK})`,
    );
  }
  return { start, rows, values: converted(array.values, shape, dtype) };
}

/**
 * Rows given as nested lists (`rows × layers × topK` of ids, as older vLLM servers send them),
 * from position 0, in the smallest type that holds `shape`'s ids.
 *
 * @throws {RoutesFormatError} for a row of another shape, or an id out of range.
 */
export function nestedRoutes(
  rows: readonly unknown[],
  shape: Pick<MoeShape, "layers" | "topK" | "experts">,
): ExpertRows {
  const width = rowWidth(shape);
  const values = new Int32Array(rows.length * width);
  rows.forEach((row, r) => {
    if (!Array.isArray(row) || row.length !== shape.layers) {
      throw new RoutesFormatError(`routed_experts row ${r} does not have ${shape.layers} layers`);
    }
    row.forEach((layer: unknown, l) => {
      if (!Array.isArray(layer) || layer.length !== shape.topK) {
        throw new RoutesFormatError(
          `routed_experts row ${r}, layer ${l} does not have ${shape.topK} experts`,
        );
      }
      layer.forEach((id: unknown, k) => {
        values[r * width + l * shape.topK + k] = Number.isInteger(id) ? Number(id) : -1;
      });
    });
  });
  return { start: 0, rows: rows.length, values: converted(values, shape, expertDtype(shape)) };
}

/** A decoded `.npy` array of integers. */
export interface NpyArray {
  readonly shape: readonly number[];
  readonly values: ExpertValues;
}

const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
const NPY_TYPES: Readonly<Record<string, ExpertDtype>> = {
  "|u1": "uint8",
  "<u1": "uint8",
  "<u2": "uint16",
  "<i2": "int16",
  "<i4": "int32",
};

/**
 * Reads a `.npy` file (format 1.0, 2.0 or 3.0) of little-endian integers, C order.
 *
 * @throws {RoutesFormatError} for anything else.
 */
export function readNpy(bytes: Uint8Array): NpyArray {
  if (bytes.length < 10 || NPY_MAGIC.some((byte, i) => bytes[i] !== byte)) {
    throw new RoutesFormatError("routed_experts is not a .npy file");
  }
  const major = bytes[6];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [headerLength, at] = major === 1
    ? [view.getUint16(8, true), 10]
    : [view.getUint32(8, true), 12];
  if (major < 1 || major > 3 || at + headerLength > bytes.length) {
    throw new RoutesFormatError(`routed_experts is a .npy file of an unknown version ${major}`);
  }
  const header = new TextDecoder().decode(bytes.subarray(at, at + headerLength));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  const dtype = descr === undefined ? undefined : NPY_TYPES[descr];
  if (dtype === undefined || fortran !== "False" || dims === undefined) {
    throw new RoutesFormatError(`routed_experts' .npy header is not one of integers in C order`);
  }
  const shape = dims.split(",").map((dim) => dim.trim()).filter((dim) => dim !== "")
    .map(Number);
  const count = shape.reduce((n, dim) => n * dim, 1);
  const start = at + headerLength;
  const size = dtypeBytes(dtype);
  if (
    shape.some((dim) => !Number.isInteger(dim) || dim < 0) || bytes.length - start !== count * size
  ) {
    throw new RoutesFormatError(
      `routed_experts' .npy data is ${bytes.length - start} bytes, not ${count} × ${size}`,
    );
  }
  // A copy: the data's offset in the file need not be aligned to its element size.
  const data = bytes.slice(start);
  const values = dtype === "uint8"
    ? data
    : dtype === "uint16"
    ? new Uint16Array(data.buffer, 0, count)
    : dtype === "int16"
    ? new Int16Array(data.buffer, 0, count)
    : new Int32Array(data.buffer, 0, count);
  return { shape, values };
}

/**
 * `values` (shaped `shape`) as a `.npy` file, format 1.0, little-endian, C order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readNpy, writeNpy } from "./routed_experts.ts";
 * const file = writeNpy(new Uint8Array([1, 2, 3, 4, 5, 6]), [3, 1, 2]);
 * assert.equal(file.length, 128 + 6); // the header padded to a multiple of 64 bytes, then the data
 * assert.deepEqual([...readNpy(file).values], [1, 2, 3, 4, 5, 6]);
 * ```
 */
export function writeNpy(values: ExpertValues, shape: readonly number[]): Uint8Array {
  const header = npyHeader(dtypeOf(values), shape);
  const data = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const file = new Uint8Array(header.length + data.length);
  file.set(header);
  file.set(data, header.length);
  return file;
}

/** The header of a `.npy` file (format 1.0) of `shape` in `dtype`, padded to 64 bytes. */
export function npyHeader(dtype: ExpertDtype, shape: readonly number[]): Uint8Array {
  const descr = { uint8: "|u1", uint16: "<u2", int16: "<i2", int32: "<i4" }[dtype];
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(", ");
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  const unpadded = 10 + dict.length + 1;
  dict += " ".repeat((64 - (unpadded % 64)) % 64) + "\n";
  const header = new Uint8Array(10 + dict.length);
  header.set(NPY_MAGIC);
  header[6] = 1;
  header[7] = 0;
  new DataView(header.buffer).setUint16(8, dict.length, true);
  header.set(new TextEncoder().encode(dict), 10);
  return header;
}

/** The dtype of a typed array of expert ids. */
export function dtypeOf(values: ExpertValues): ExpertDtype {
  return values instanceof Uint8Array
    ? "uint8"
    : values instanceof Uint16Array
    ? "uint16"
    : values instanceof Int16Array
    ? "int16"
    : "int32";
}

/** `values` in `dtype`, each checked to be an expert id of `shape`. */
function converted(
  values: ExpertValues,
  shape: Pick<MoeShape, "experts">,
  dtype: ExpertDtype,
): ExpertValues {
  const out = expertValues(dtype, values.length);
  for (let i = 0; i < values.length; i++) {
    const id = values[i];
    if (id < 0 || id >= shape.experts) {
      throw new RoutesFormatError(
        `routed_experts holds expert ${id} at value ${i}; the model has ${shape.experts}`,
      );
    }
    out[i] = id;
  }
  return out;
}

/** Bytes from base64, by the platform's own decoder. */
export function fromBase64(base64: string): Uint8Array {
  try {
    return (Uint8Array as unknown as { fromBase64(text: string): Uint8Array }).fromBase64(base64);
  } catch {
    throw new RoutesFormatError("routed_experts is not base64");
  }
}

/** Bytes as base64, by the platform's own encoder. */
export function toBase64(bytes: Uint8Array): string {
  return (bytes as unknown as { toBase64(): string }).toBase64();
}
