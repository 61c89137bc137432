/* board5: the shared 5x5 board's lines and symmetries. See board5.h. */
#include "games/board5.h"

const int board5_dr[8] = {1, -1, 0, 0, 1, 1, -1, -1};
const int board5_dc[8] = {0, 0, 1, -1, 1, -1, 1, -1};

const int16_t board5_mirror_cells[BOARD5_POINTS] = {
    4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 14, 13, 12, 11, 10, 19, 18, 17, 16, 15, 24, 23, 22, 21, 20,
};

int board5_along(int sq, int d, int k)
{
    int r = sq / 5, c = sq % 5;
    if (d >= 4 && (r + c) % 2)
        return -1; /* no diagonal from an odd point */
    int r2 = r + k * board5_dr[d], c2 = c + k * board5_dc[d];
    return r2 >= 0 && r2 < 5 && c2 >= 0 && c2 < 5 ? r2 * 5 + c2 : -1;
}

int board5_ray(int sq, int d, int *pts)
{
    int n = 0, p;
    while ((p = board5_along(sq, d, n + 1)) >= 0)
        pts[n++] = p;
    return n;
}

int board5_rot_action(int action)
{
    int s = action / BOARD5_POINTS, d = action % BOARD5_POINTS;
    return (BOARD5_POINTS - 1 - s) * BOARD5_POINTS + (BOARD5_POINTS - 1 - d);
}

int board5_mirror_action(int action)
{
    int s = action / BOARD5_POINTS, d = action % BOARD5_POINTS;
    return board5_mirror_cells[s] * BOARD5_POINTS + board5_mirror_cells[d];
}

void board5_print_numbers(FILE *out, int r, bool turned)
{
    fputs("    ", out);
    for (int j = 0; j < 5; j++)
        fprintf(out, " %2d", turned ? r * 5 + 4 - j : r * 5 + j);
}

int board5_print_row_start(FILE *out, int i, bool turned)
{
    int r = turned ? i : 4 - i;
    fprintf(out, "  %2d  ", turned ? r * 5 + 4 : r * 5);
    return r;
}

void board5_print_row_end(FILE *out, int i, bool turned)
{
    int r = turned ? i : 4 - i;
    fprintf(out, "  %2d", turned ? r * 5 : r * 5 + 4);
    board5_print_numbers(out, r, turned);
    fputc('\n', out);
    if (i < 4) {
        fputs("       ", out);
        for (int j = 0; j < 4; j++) {
            /* The square below this row between these two points: its
             * diagonal joins the corners with an even row + column (R1, A1):
             * from the upper left when that corner is one of them. */
            int c = turned ? 4 - j : j;
            fprintf(out, "| %c ", (r + c) % 2 == 0 ? '\\' : '/');
        }
        fputs("|\n", out);
    }
}
