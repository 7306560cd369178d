/* help.c — the text of "zc --help", "zc help CMD" and "zc CMD --help". */
#include <string.h>

#include "cli.h"

static const char help_main[] =
    "usage: zc COMMAND [OPTIONS] [ARGS...]\n"
    "\n"
    "Inspect and check the safetensors files of ZeroCopy-Continuity: the store's\n"
    "spill files (*.latent), ComfyUI .latent files and any *.safetensors file.\n"
    "\n"
    "commands:\n"
    "  ls DIR                  list the .latent/.safetensors/.rejected files in DIR\n"
    "  inspect [--json] [--full] FILE\n"
    "                          every tensor (digests recomputed) and metadata entry\n"
    "  verify [--allow-missing] FILE...\n"
    "                          check every tensor against its recorded digest\n"
    "  diff A B                compare two files tensor by tensor (MSE, PSNR)\n"
    "  dump FILE TENSOR        print the values of one tensor, one per line\n"
    "  film [--json] [--no-verify] DIR TAG\n"
    "                          the film of TAG from its spill files in DIR: takes,\n"
    "                          the chosen line, every file and hop verified\n"
    "  help [COMMAND]          this overview, or the help of one command\n"
    "\n"
    "options:\n"
    "  -h, --help              this overview ('zc COMMAND --help': that command's)\n"
    "  --version               print the engine version and exit\n"
    "  --                      (after COMMAND) the arguments that follow are not\n"
    "                          options, e.g. a file named \"-x.latent\"\n"
    "\n"
    "exit status:\n"
    "  0  success (diff: every tensor bit-identical)\n"
    "  1  a check failed: digest mismatch, missing digest, corrupt or unreadable\n"
    "     file (diff: the files differ)\n"
    "  2  usage error, or standard output cannot be written (diff and ls: also\n"
    "     any error that stops the command)\n"
    "\n"
    "Errors are printed on stderr as \"zc: MESSAGE\".  Digests are XXH3-64 (seed\n"
    "0) of a tensor's bytes, recorded in the file's metadata as\n"
    "\"zc.digest.NAME\": \"xxh3:<16 hex digits>\"; files written by engine 0.2\n"
    "and earlier record XXH64 as \"xxh64:<16 hex digits>\", which every command\n"
    "reads and checks the same way.\n";

static const char help_ls[] =
    "usage: zc ls DIR\n"
    "\n"
    "List the files of DIR (not its subdirectories) whose names end in .latent,\n"
    ".safetensors or .rejected (files the store renamed aside), sorted by name,\n"
    "one line each:\n"
    "\n"
    "  NAME  KIND  tag=TAG  generation=N  tensors=N  bytes=N  size=N  DIGESTS\n"
    "\n"
    "  KIND        latent, safetensors or rejected\n"
    "  tag, generation\n"
    "              the zc.tag and zc.generation metadata, \"-\" when absent\n"
    "  tensors     number of tensors\n"
    "  bytes       bytes of tensor data; size: bytes of the file\n"
    "  DIGESTS     \"digests recorded (ALGO)\" (every tensor has one), \"no\n"
    "              digests\", or \"digests partial (K of N, ALGO)\"; ALGO is xxh3,\n"
    "              xxh64 or xxh3+xxh64.  Digests are not verified here:\n"
    "              use 'zc verify'.  ComfyUI's empty latent_format_version_0\n"
    "              marker needs no digest and is not counted.\n"
    "\n"
    "A file that cannot be opened is listed as \"NAME  KIND  error: MESSAGE\" and\n"
    "the listing goes on.  Control characters in names are printed as \\xNN.\n"
    "\n"
    "options:\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status:\n"
    "  0  DIR was listed (even when some files could not be opened)\n"
    "  2  usage error, or DIR cannot be read\n";

static const char help_inspect[] =
    "usage: zc inspect [--json] [--full] FILE\n"
    "\n"
    "Print every tensor of FILE and every metadata entry.  Each tensor is read\n"
    "and its digest computed (with the recorded digest's algorithm, XXH3-64 when\n"
    "none is recorded):\n"
    "\n"
    "  file: PATH (N bytes)\n"
    "  tensors: N (N data bytes)\n"
    "  tensor NAME dtype=F32 shape=[1,4,64,64] bytes=N offset=N recorded=DIGEST\n"
    "         computed=DIGEST STATUS                        (on one line)\n"
    "  metadata: N\n"
    "  meta KEY = VALUE\n"
    "  summary: N match, N MISMATCH, N none recorded, N unreadable\n"
    "\n"
    "  offset      of the tensor's first byte from the start of the file\n"
    "  recorded    the digest in the metadata, \"-\" when none\n"
    "  computed    the digest of the bytes as stored, \"-\" when unreadable\n"
    "  STATUS      match, MISMATCH, none recorded, or \"ERROR MESSAGE\"\n"
    "\n"
    "Metadata values longer than 200 bytes (ComfyUI's prompt and workflow) are\n"
    "cut, with the full length shown, unless --full is given.  Control\n"
    "characters are printed as \\xNN and a backslash as \\\\.\n"
    "\n"
    "options:\n"
    "  --json        print one JSON object instead:\n"
    "                {\"file\", \"file_bytes\", \"ok\", \"tensors\": [{\"name\", \"dtype\",\n"
    "                \"shape\", \"bytes\", \"offset\", \"recorded_digest\",\n"
    "                \"computed_digest\", \"status\", \"error\"}], \"metadata\": {}}\n"
    "                digests are null when absent; status is \"match\",\n"
    "                \"MISMATCH\", \"none recorded\" or \"error\"; metadata values are\n"
    "                never cut.  A file that cannot be opened gives\n"
    "                {\"file\", \"ok\": false, \"error\"}.\n"
    "  --full        do not cut long metadata values\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status:\n"
    "  0  every tensor was read and every recorded digest matches\n"
    "  1  the file cannot be opened (corrupt, truncated, missing), a tensor is\n"
    "     unreadable, or a digest does not match\n"
    "  2  usage error\n";

static const char help_verify[] =
    "usage: zc verify [--allow-missing] FILE...\n"
    "\n"
    "Read every tensor of every FILE and compare the digest of its bytes with\n"
    "the one recorded in the file.  One line per file:\n"
    "\n"
    "  OK PATH (N tensors, all digests match)\n"
    "  FAIL PATH: tensor NAME digest mismatch (recorded D, computed D)[; ...]\n"
    "  FAIL PATH: cannot open: MESSAGE\n"
    "  FAIL PATH: tensor NAME unreadable: MESSAGE\n"
    "  NO-DIGEST PATH: no digest recorded for tensor NAME[, NAME...]\n"
    "\n"
    "A file without our digests (a ComfyUI .latent file, any foreign\n"
    "safetensors file) is NO-DIGEST: nothing certifies its bytes.  ComfyUI's\n"
    "empty latent_format_version_0 marker holds no data, needs no digest and\n"
    "is not counted (a digest recorded for it is still checked).  A file that\n"
    "cannot be opened or read is also reported on stderr as \"zc: MESSAGE\".\n"
    "\n"
    "options:\n"
    "  --allow-missing   accept tensors without a recorded digest: such a file is\n"
    "                    \"OK PATH (N tensors: K digests match, M without digest\n"
    "                    allowed)\"; mismatches still fail\n"
    "  -h, --help        this help\n"
    "\n"
    "exit status:\n"
    "  0  every tensor of every file has a recorded digest and it matches\n"
    "  1  any digest mismatch, corrupt, truncated or unreadable file, or missing\n"
    "     digest (unless --allow-missing)\n"
    "  2  usage error (no FILE, unknown option)\n";

static const char help_diff[] =
    "usage: zc diff A B\n"
    "\n"
    "Compare the tensors of two files by name (the union of both; A's order,\n"
    "then B's).  One line per tensor, then a summary:\n"
    "\n"
    "  tensor NAME: identical (bit-for-bit)\n"
    "  tensor NAME: only in A                      (or: only in B)\n"
    "  tensor NAME: dtype mismatch (A F32, B F16)\n"
    "  tensor NAME: shape mismatch (A [1,4], B [1,5])\n"
    "  tensor NAME: differs mse=X max_abs=X psnr=X dB peak=X elements=N\n"
    "               differing=N nan=N                  (on one line)\n"
    "  tensor NAME: error: MESSAGE\n"
    "  summary: N tensors, N identical, N different, N unreadable\n"
    "\n"
    "Values are decoded to double (F8/F16/BF16/F32 exactly; I64 beyond 2^53\n"
    "rounds; BOOL is 0 or 1).  For tensors of the same dtype and shape whose\n"
    "bytes differ:\n"
    "  mse       mean of (a-b)^2 over the elements that are not NaN-counted\n"
    "  max_abs   largest |a-b|\n"
    "  peak      largest |a| over the finite elements of A\n"
    "  psnr      10*log10(peak^2/mse) dB; inf when mse is 0 (only +0/-0 or\n"
    "            NaN-counted elements differ), -inf when peak is 0 or mse is inf\n"
    "  differing elements whose bytes differ\n"
    "  nan       differing elements with a NaN on either side: counted here,\n"
    "            left out of mse and max_abs.  NaN vs NaN with equal bits is\n"
    "            an equal element.\n"
    "ComfyUI's empty latent_format_version_0 marker is not listed when both\n"
    "files hold it identically.  Metadata is not compared.\n"
    "A tensor whose bytes fail their recorded digest is still compared (as\n"
    "stored) after a warning on stderr.\n"
    "\n"
    "options:\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status:\n"
    "  0  every tensor is bit-identical and both files hold the same names\n"
    "  1  some tensor differs or is only in one file\n"
    "  2  usage error, or a file or tensor cannot be read\n";

static const char help_dump[] =
    "usage: zc dump FILE TENSOR\n"
    "\n"
    "Print the elements of one tensor in row-major order, one per line:\n"
    "floats with 17 significant digits, enough to read back the exact value\n"
    "(\"nan\", \"inf\", \"-inf\"; -0 keeps its sign), integers exactly, BOOL as\n"
    "0 or 1.  A debugging aid for the element decoding that diff uses.\n"
    "\n"
    "options:\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status:\n"
    "  0  the values were printed (a digest mismatch is warned about on stderr)\n"
    "  1  the file cannot be opened, has no tensor TENSOR, or it cannot be read\n"
    "  2  usage error\n";

static const char help_film[] =
    "usage: zc film [--json] [--no-verify] DIR TAG\n"
    "\n"
    "Read the film of TAG from its spill files DIR/TAG@<generation>.latent alone:\n"
    "each shot's lineage names the shot it continued (its parent); shots of one\n"
    "parent (or the tag's roots) are the takes of a shot; the chosen take is the\n"
    "pinned one (DIR/.zc-film-TAG.json), else the one whose descendants hold the\n"
    "newest generation.  One line per shot of the chosen line, in film order:\n"
    "\n"
    "  gen G  shot S  take K/N  STATE  parent P  trim T  adapter A  file F\n"
    "         hop H  digest D  tail D                   (on one line)\n"
    "\n"
    "then the shots off the line (alternative: a take whose parent is on the\n"
    "line; stale: it continues a take that is not chosen; broken: its lineage\n"
    "cannot be followed), each problem, and a last line:\n"
    "\n"
    "  film TAG: N shots on the line, all hops verified\n"
    "  film TAG: N shots on the line, verification FAILED: hop 7 <- 5: tail\n"
    "            digest ... does not match the parent's last 3 frames ...\n"
    "\n"
    "Verification reads every tensor against its recorded digest and recomputes\n"
    "each hop's tail digest from the parent's latent (its last tail_frames\n"
    "frames; the audio span for an audio tail digest).  Digests are shown cut\n"
    "to 8 hex digits; --json has them whole.\n"
    "\n"
    "options:\n"
    "  --json        print the JSON of zc_film_describe instead (docs/film.md)\n"
    "  --no-verify   read the headers only (files and hops \"unchecked\")\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status:\n"
    "  0  the film holds together (verified: every file and hop checks out)\n"
    "  1  a file or hop fails verification, or a shot's lineage is broken\n"
    "  2  usage error, the folder cannot be read, or TAG has no files there\n";

static const struct {
    const char *name;
    const char *text;
} helps[] = {
    {"ls", help_ls},
    {"inspect", help_inspect},
    {"verify", help_verify},
    {"diff", help_diff},
    {"dump", help_dump},
    {"film", help_film},
};

void cli_help_main(FILE *out)
{
    fputs(help_main, out);
}

int cli_help_command(const char *cmd, FILE *out)
{
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        if (strcmp(helps[i].name, cmd) == 0) {
            fputs(helps[i].text, out);
            return 0;
        }
    }
    return -1;
}
