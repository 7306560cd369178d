/* win32_args.c — main's arguments in UTF-8 (the zc tool only: linking
 * shell32 into zc.dll would load a dozen DLLs into every Python that uses it). */
#include <stdlib.h>

#include "win32_internal.h"
#include <shellapi.h> /* after windows.h, which it needs */

char **zc_os_utf8_argv(int argc, char **argv)
{
    int n = 0;
    wchar_t **wide = CommandLineToArgvW(GetCommandLineW(), &n);
    if (wide == NULL)
        return argv;
    char **out = n == argc ? calloc((size_t)n + 1, sizeof *out) : NULL;
    for (int i = 0; out && i < n; i++) {
        int len = WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, NULL, 0, NULL, NULL);
        if (len <= 0 || (out[i] = malloc((size_t)len)) == NULL) {
            for (int j = 0; j < i; j++)
                free(out[j]);
            free(out);
            out = NULL;
            break;
        }
        WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, out[i], len, NULL, NULL);
    }
    LocalFree(wide);
    return out ? out : argv; /* out lives until the process ends */
}
