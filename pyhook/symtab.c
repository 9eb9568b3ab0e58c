/* symtab.c -- the address of a function the interpreter does not export.
 *
 * CPython's traceback dumper (_Py_DumpTracebackThreads, which faulthandler
 * uses) is exported by some builds and hidden in others (3.9, 3.10, 3.13
 * here): hidden, it is still named in the library's full symbol table
 * (.symtab) unless the library was stripped. This reads that table from
 * the file the interpreter was loaded from, when a crash needs it: reading
 * it at start-up cost every run 0.6M instructions and the page faults of
 * a scan of the table (fatal.c). */
#include "hook.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The value of the function symbol `name` in the ELF file map[0..size)
 * (its .symtab), or 0. */
static uint64_t find_in(const uint8_t *map, size_t size, const char *name) {
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        return 0;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);
    size_t nl = strlen(name);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
        const Elf64_Shdr *st = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset ||
            st->sh_offset > size || st->sh_size > size - st->sh_offset)
            return 0;
        const Elf64_Sym *sym = (const Elf64_Sym *)(map + sh[i].sh_offset);
        const char *str = (const char *)(map + st->sh_offset);
        size_t n = sh[i].sh_size / sizeof *sym;
        for (size_t k = 0; k < n; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_value == 0 ||
                sym[k].st_name >= st->sh_size || st->sh_size - sym[k].st_name <= nl)
                continue;
            if (memcmp(str + sym[k].st_name, name, nl + 1) == 0) return sym[k].st_value;
        }
    }
    return 0;
}

int py__symtab_where(const void *anchor, py_symtab_where *w) {
    Dl_info di;
    if (!dladdr(anchor, &di) || !di.dli_fbase) return -1;
    /* the main program's own name may be relative: read it by /proc */
    const char *path = di.dli_fname && di.dli_fname[0] == '/' ? di.dli_fname
                                                               : "/proc/self/exe";
    size_t n = strlen(path);
    if (n >= sizeof w->path) return -1;
    memcpy(w->path, path, n + 1);
    w->anchor = anchor;
    w->base = (uintptr_t)di.dli_fbase;
    return 0;
}

void *py__symtab_find(const py_symtab_where *w, const char *anchor_name, const char *name) {
    int fd = open(w->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat sb;
    void *map = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0)
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return NULL;
    /* addresses of a position-dependent executable are absolute */
    uintptr_t base = ((const Elf64_Ehdr *)map)->e_type == ET_EXEC ? 0 : w->base;
    uint64_t off = find_in(map, (size_t)sb.st_size, name);
    /* the file is the image that was loaded (not replaced since): the
     * anchor is where the file says */
    uint64_t at = find_in(map, (size_t)sb.st_size, anchor_name);
    munmap(map, (size_t)sb.st_size);
    if (!off || !at || base + at != (uintptr_t)w->anchor) return NULL;
    return (void *)(base + off);
}
