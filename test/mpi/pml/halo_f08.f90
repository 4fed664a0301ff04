! A Fortran program (use mpi_f08) that exchanges the halo of a 2-D block with MPI subarray
! types: each rank owns an (n+2) x (n+2) array, its interior filled with values that name the
! rank and position, and sends its first and last interior columns to its ring neighbours,
! which receive them into their halo columns. Under `--mca pml ucxdt` the subarray types move
! through ucxdt (Open MPI's Fortran bindings call the same point-to-point layer as C's).
! Exit status 0 when every halo cell holds the neighbour's value and no other cell changed.
! With the argument `device` the array lives in GPU memory (cudaMalloc through ISO_C_BINDING, on
! GPU local rank mod GPUs): filled and read back with cudaMemcpy, and handed to MPI as a Fortran
! pointer to it that the program itself never touches. Exit status 77 when there is no GPU.
program halo_f08
    use mpi_f08
    use, intrinsic :: iso_c_binding
    implicit none
    interface
        integer(c_int) function cudaGetDeviceCount(count) bind(C, name='cudaGetDeviceCount')
            import :: c_int
            integer(c_int) :: count
        end function
        integer(c_int) function cudaSetDevice(device) bind(C, name='cudaSetDevice')
            import :: c_int
            integer(c_int), value :: device
        end function
        integer(c_int) function cudaMalloc(ptr, bytes) bind(C, name='cudaMalloc')
            import :: c_int, c_ptr, c_size_t
            type(c_ptr) :: ptr
            integer(c_size_t), value :: bytes
        end function
        integer(c_int) function cudaFree(ptr) bind(C, name='cudaFree')
            import :: c_int, c_ptr
            type(c_ptr), value :: ptr
        end function
        integer(c_int) function cudaMemcpy(dst, src, bytes, kind) bind(C, name='cudaMemcpy')
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: dst, src
            integer(c_size_t), value :: bytes
            integer(c_int), value :: kind
        end function
    end interface
    integer, parameter :: n = 64
    integer(c_int), parameter :: to_device = 1, to_host = 2  ! cudaMemcpyHostToDevice, DeviceToHost
    integer(c_size_t), parameter :: bytes = 8_c_size_t * (n + 2) * (n + 2)
    double precision, target :: a(0:n+1, 0:n+1)
    double precision, pointer :: buf(:, :)
    type(c_ptr) :: dev = c_null_ptr
    type(MPI_Datatype) :: first_col, last_col, left_halo, right_halo
    type(MPI_Request) :: req(4)
    integer :: rank, size, left, right, i, j, bad, allbad, stat
    integer(c_int) :: gpus
    character(len=16) :: arg
    logical :: on_device
    call get_command_argument(1, arg)
    on_device = arg == 'device'
    if (on_device) then
        ! Before MPI_Init, so that the MPI's CUDA context is this GPU's.
        if (cudaGetDeviceCount(gpus) /= 0 .or. gpus < 1) then
            print '(a)', 'halo_f08: no GPU: skipped'
            stop 77
        end if
        call get_environment_variable('OMPI_COMM_WORLD_LOCAL_RANK', arg, status=stat)
        i = 0
        if (stat == 0) read (arg, *) i
        if (cudaSetDevice(int(modulo(i, gpus), c_int)) /= 0) error stop 'halo_f08: cudaSetDevice failed'
    end if
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    left = modulo(rank - 1, size)
    right = modulo(rank + 1, size)
    a = -1d0
    do j = 1, n
        do i = 1, n
            a(i, j) = value(rank, i, j)
        end do
    end do
    ! Columns 1 and n of the interior, and halo columns 0 and n+1 (rows 1..n), as subarrays.
    call column(1, first_col)
    call column(n, last_col)
    call column(0, left_halo)
    call column(n + 1, right_halo)
    if (on_device) then
        if (cudaMalloc(dev, bytes) /= 0) error stop 'halo_f08: cudaMalloc failed'
        if (cudaMemcpy(dev, c_loc(a), bytes, to_device) /= 0) error stop 'halo_f08: cudaMemcpy failed'
        call c_f_pointer(dev, buf, [n + 2, n + 2])
    else
        buf(0:, 0:) => a
    end if
    call MPI_Irecv(buf, 1, left_halo, left, 1, MPI_COMM_WORLD, req(1))
    call MPI_Irecv(buf, 1, right_halo, right, 2, MPI_COMM_WORLD, req(2))
    call MPI_Isend(buf, 1, last_col, right, 1, MPI_COMM_WORLD, req(3))
    call MPI_Isend(buf, 1, first_col, left, 2, MPI_COMM_WORLD, req(4))
    call MPI_Waitall(4, req, MPI_STATUSES_IGNORE)
    if (on_device) then
        if (cudaMemcpy(c_loc(a), dev, bytes, to_host) /= 0) error stop 'halo_f08: cudaMemcpy failed'
        if (cudaFree(dev) /= 0) error stop 'halo_f08: cudaFree failed'
    end if
    bad = 0
    do j = 0, n + 1
        do i = 0, n + 1
            if (a(i, j) /= expected(i, j)) bad = bad + 1
        end do
    end do
    call MPI_Allreduce(bad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0) then
        if (allbad == 0) then
            print '(a, i0, a, a)', 'halo_f08: ', size, ' ranks, every halo cell right, ', &
                merge('device memory', 'host memory  ', on_device)
        else
            print '(a, i0, a)', 'halo_f08: FAIL, ', allbad, ' cells wrong'
        end if
    end if
    call MPI_Type_free(first_col)
    call MPI_Type_free(last_col)
    call MPI_Type_free(left_halo)
    call MPI_Type_free(right_halo)
    call MPI_Finalize()
    if (allbad /= 0) error stop 1
contains
    double precision function value(r, i, j)
        integer, intent(in) :: r, i, j
        value = r * 1d6 + j * 1d3 + i
    end function
    ! What cell (i, j) holds after the exchange.
    double precision function expected(i, j)
        integer, intent(in) :: i, j
        if (i >= 1 .and. i <= n .and. j >= 1 .and. j <= n) then
            expected = value(rank, i, j)
        else if (i >= 1 .and. i <= n .and. j == 0) then
            expected = value(left, i, n)
        else if (i >= 1 .and. i <= n .and. j == n + 1) then
            expected = value(right, i, 1)
        else
            expected = -1d0
        end if
    end function
    subroutine column(j, t)
        integer, intent(in) :: j
        type(MPI_Datatype), intent(out) :: t
        call MPI_Type_create_subarray(2, [n + 2, n + 2], [n, 1], [1, j], MPI_ORDER_FORTRAN, &
                                      MPI_DOUBLE_PRECISION, t)
        call MPI_Type_commit(t)
    end subroutine
end program
