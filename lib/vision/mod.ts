/**
 * Vision: how many tokens a vision-language model gives an image, by its processor's settings.
 * @module
 */
export * from "./image_grid.ts";
export * from "./image_probe.ts";
