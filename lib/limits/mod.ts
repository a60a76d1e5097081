/** Bounds on what clients may store, and the shape every JSON body must have. @module */
export * from "./bounds.ts";
export * from "./json_shape.ts";
export * from "./read_capped.ts";
