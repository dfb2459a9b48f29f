/**
 * Event colours: stable per name (a hash of the name picks one of a fixed palette).
 *
 * The same name has the same colour in every window, zoom level, host and reload, because
 * the colour depends on nothing but the name's characters (FNV-1a, 32 bit). The palette is
 * light enough for black text on every entry, so text is drawn in one colour.
 */

/** Medium-light colours that all read well under black text. */
export const PALETTE: readonly string[] = [
  "#8ab4f8",
  "#81c995",
  "#fdd663",
  "#f6aea9",
  "#c58af9",
  "#78d9ec",
  "#fcad70",
  "#a8dab5",
  "#ff8bcb",
  "#aecbfa",
  "#e6c9a8",
  "#b4c7a0",
  "#d7aefb",
  "#9fc3d6",
  "#f8c1a0",
  "#cdd57a",
  "#a7ffeb",
  "#e0b0c8",
  "#b0bec5",
  "#ffcc80",
];

export const TEXT_COLOUR = "#202124";
export const SELECTED_OUTLINE = "#d50000";

/** FNV-1a over the UTF-16 code units of `text` (unsigned 32 bit). */
export function hashName(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The palette index of a name. */
export function colourIndex(name: string): number {
  return hashName(name) % PALETTE.length;
}

/** The colour of a name (a palette entry). */
export function colourOf(name: string): string {
  return PALETTE[colourIndex(name)] ?? "#b0bec5";
}
